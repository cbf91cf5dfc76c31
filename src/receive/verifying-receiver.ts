/**
 * A local webhook receiver that verifies every delivery with the SDK's `verifyWebhookSignature`, on
 * the raw body bytes, and answers 204 (verified) or 400 (not); 413 past the body limit, 405 for
 * anything but POST. Any path is accepted, so whatever path the callback URL names reaches it.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_TOLERANCE_SECONDS, timestampSkewSeconds, verifyWebhookSignature } from '../signing/verify.js';

export interface ReceivedDelivery {
  /** When the request ended, ms since the epoch. */
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly webhookId: string | null;
  readonly webhookTimestamp: string | null;
  readonly verified: boolean;
  /** Why it was not verified; null when it was. */
  readonly reason: string | null;
  readonly status: 204 | 400 | 405 | 413;
  /** The raw body, or null past the body limit (not kept). */
  readonly body: Buffer | null;
  readonly bodyBytes: number;
}

export interface VerifyingReceiverOptions {
  readonly secret: string;
  /** @default 127.0.0.1 */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** @default 300 */
  readonly toleranceSeconds?: number;
  /** @default 1 MiB */
  readonly maxBodyBytes?: number;
  onDelivery(delivery: ReceivedDelivery): void;
  /** @default Date.now */
  readonly now?: () => number;
}

export interface VerifyingReceiver {
  /** e.g. http://127.0.0.1:9000/ */
  readonly url: string;
  close(): Promise<void>;
}

const single = (headers: IncomingHttpHeaders, name: string): string | null => {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
};

/**
 * Why a delivery that the SDK refused was refused, for the person reading the output. The verdict
 * itself is always the SDK's; this only names the first problem it can see.
 */
export function rejectionReason(input: { id: string | null; timestamp: string | null; signature: string | null }, toleranceSeconds: number, nowMs: number): string {
  if (!input.id) return 'no webhook-id header';
  if (!input.timestamp) return 'no webhook-timestamp header';
  if (!input.signature) return 'no webhook-signature header';
  if (!/^\d{1,15}$/.test(input.timestamp)) return `webhook-timestamp ${JSON.stringify(input.timestamp.slice(0, 40))} is not Unix seconds`;
  const skew = timestampSkewSeconds(Number(input.timestamp), nowMs);
  if (Math.abs(skew) > toleranceSeconds) return `webhook-timestamp is ${Math.abs(skew)} s in the ${skew < 0 ? 'past' : 'future'} (tolerance ${toleranceSeconds} s)`;
  const candidates = input.signature.split(' ');
  if (!candidates.some((candidate) => candidate.startsWith('v1,'))) return 'no v1 signature in webhook-signature';
  return 'signature does not match (wrong secret, or the body or headers changed)';
}

/** Answers 200 to GET and HEAD, so a script can wait until the receiver listens. */
export const HEALTH_PATH = '/healthz';

export async function startVerifyingReceiver(options: VerifyingReceiverOptions): Promise<VerifyingReceiver> {
  const now = options.now ?? Date.now;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const server = createServer((request, response) => {
    // A readiness probe (scripts wait for the receiver with it) is not a delivery: answered, not reported.
    if ((request.method === 'GET' || request.method === 'HEAD') && request.url === HEALTH_PATH) {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // Past the limit the rest is read and dropped, so the sender still gets its answer.
      if (bytes <= maxBodyBytes) chunks.push(chunk);
    });
    request.on('error', () => response.destroy());
    request.on('end', () => {
      void (async () => {
        const id = single(request.headers, 'webhook-id');
        const timestamp = single(request.headers, 'webhook-timestamp');
        const signature = single(request.headers, 'webhook-signature');
        const base = { at: now(), method: request.method ?? '', path: request.url ?? '/', webhookId: id, webhookTimestamp: timestamp, bodyBytes: bytes };
        let delivery: ReceivedDelivery;
        if (request.method !== 'POST') {
          delivery = { ...base, verified: false, reason: `method ${request.method ?? '?'}: deliveries are POSTs`, status: 405, body: null };
        } else if (bytes > maxBodyBytes) {
          delivery = { ...base, verified: false, reason: `body of ${bytes} bytes is over the ${maxBodyBytes}-byte limit`, status: 413, body: null };
        } else {
          const body = Buffer.concat(chunks);
          const verified = id !== null && timestamp !== null && signature !== null && (await verifyWebhookSignature({ id, timestamp, signature, body, secret: options.secret, toleranceSeconds: tolerance }));
          const reason = verified ? null : rejectionReason({ id, timestamp, signature }, tolerance, now());
          delivery = { ...base, verified, reason, status: verified ? 204 : 400, body };
        }
        response.writeHead(delivery.status, delivery.status === 405 ? { allow: 'POST' } : {}).end();
        options.onDelivery(delivery);
      })();
    });
  });
  server.listen(options.port, options.host ?? '127.0.0.1');
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error as Error))]);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/`,
    async close() {
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
