/**
 * The fuzzer's HTTP/1.1 client, on a bare socket, because it must do what a polite client never
 * does: cut a body into writes at chosen bytes (inside a UTF-8 character), frame it chunked or with a
 * content-length, stop half-way, or declare a length it does not send. One connection per exchange
 * (`connection: close`); the answer is its status line, read as soon as it arrives.
 */
import { connect as connectTcp } from 'node:net';
import type { Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { basicAuthorization } from '../transport/url-credentials.js';

/** The answer to one request: a status, or none (`error` says why). */
export interface WireOutcome {
  readonly status: number | null;
  readonly error: string | null;
  readonly durationMs: number;
}

export interface WireRequest {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** @default content-length */
  readonly framing?: 'content-length' | 'chunked';
  /** Byte offsets where the body is cut into separate writes. @default none */
  readonly splits?: readonly number[];
  /** What follows the pieces: `finish` the request (the default); `stall` (keep the connection open, send nothing more); `half-close` (send FIN). */
  readonly after?: 'finish' | 'stall' | 'half-close';
  /** A content-length other than the body's own (a lying client). */
  readonly declaredLength?: number;
  /** How many pieces to send, when not all (a slow client that stopped). */
  readonly piecesSent?: number;
}

function pieces(body: Uint8Array, splits: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let from = 0;
  for (const at of [...splits, body.length]) {
    if (at > from) out.push(body.subarray(from, at));
    from = Math.max(from, at);
  }
  return out.length === 0 ? [body] : out;
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/**
 * Sends one request to `target` and resolves with its status, never rejecting. Credentials in
 * `target` go out as a real delivery sends them (`authorization: Basic …`, unless the request
 * names its own `authorization`), and never in the request line.
 */
export function sendWire(target: URL, request: WireRequest, timeoutMs: number): Promise<WireOutcome> {
  const started = performance.now();
  const https = target.protocol === 'https:';
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port || (https ? 443 : 80));
  const framing = request.framing ?? 'content-length';
  const parts = pieces(request.body, request.splits ?? []).slice(0, request.piecesSent ?? Infinity);
  const length = request.declaredLength ?? request.body.length;
  const authorization = basicAuthorization(target);
  const ownAuthorization = authorization !== null && Object.keys(request.headers).some((name) => name.toLowerCase() === 'authorization');
  const head = [
    `POST ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    'connection: close',
    ...(authorization !== null && !ownAuthorization ? [`authorization: ${authorization}`] : []),
    ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
    framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${length}`,
    '',
    '',
  ].join('\r\n');

  return new Promise((resolve) => {
    let settled = false;
    let received = '';
    const socket: Socket = https ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, error, durationMs: Math.round(performance.now() - started) });
    };
    const timer = setTimeout(() => finish(null, `no answer within ${timeoutMs} ms`), timeoutMs);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const match = STATUS_LINE.exec(received);
      if (match) finish(Number(match[1]), null);
      else if (received.includes('\r\n')) finish(null, `not an HTTP answer: ${JSON.stringify(received.slice(0, 40))}`);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => finish(null, error.code === 'ECONNREFUSED' ? 'connection refused' : error.code === 'ECONNRESET' || error.code === 'EPIPE' ? 'connection closed by the receiver' : `${error.code ?? 'error'}: ${error.message}`));
    socket.on('close', () => finish(null, 'connection closed by the receiver'));
    socket.once(https ? 'secureConnect' : 'connect', () => {
      void (async () => {
        socket.write(head);
        for (const part of parts) {
          if (settled) return;
          const framed = framing === 'chunked' ? [Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')] : [part];
          for (const bytes of framed) if (!socket.write(bytes)) await new Promise((done) => socket.once('drain', done));
          // A turn of the event loop between pieces, so each tends to leave as its own segment.
          await new Promise((done) => setImmediate(done));
        }
        if (settled) return;
        const after = request.after ?? 'finish';
        if (after === 'finish' && framing === 'chunked') socket.write('0\r\n\r\n');
        if (after === 'half-close') socket.end();
      })();
    });
  });
}

/** How a receiver treated a client that stopped: it answered, closed, or was still waiting when we gave up. */
export interface StallOutcome {
  readonly status: number | null;
  /** `answered`, `closed` (without an answer) or `waiting` (nothing by the deadline). */
  readonly result: 'answered' | 'closed' | 'waiting';
  readonly afterMs: number;
}

/** Sends `request` (which stalls or half-closes), waiting up to `waitMs` to see what the receiver does. */
export async function sendStalled(target: URL, request: WireRequest, waitMs: number): Promise<StallOutcome> {
  const outcome = await sendWire(target, request, waitMs);
  if (outcome.status !== null) return { status: outcome.status, result: 'answered', afterMs: outcome.durationMs };
  return { status: null, result: outcome.error?.startsWith('no answer within') ? 'waiting' : 'closed', afterMs: outcome.durationMs };
}
