import { connect } from 'node:net';
import { HttpSender } from '../transport/http-sender.js';

/** The answer to one POST: a status, or none (`error` says why). */
export interface PostOutcome {
  readonly status: number | null;
  readonly error: string | null;
  readonly durationMs: number;
}

export interface Poster {
  post(headers: Readonly<Record<string, string>>, body: Uint8Array): Promise<PostOutcome>;
  close(): Promise<void>;
}

/**
 * POSTs to one URL the way Hookline delivers: undici keep-alive pool, one timeout over the whole
 * exchange, redirects not followed. Any address may be named: the CLI's user chose the target.
 * `connections` is how many POSTs may be in flight at once: a caller with more waits its turn.
 */
export function createPoster(url: string, timeoutMs: number, connections: number): Poster {
  const sender = new HttpSender({ timeoutMs, maxConnectionsPerOrigin: connections });
  return {
    async post(headers, body) {
      const outcome = await sender.send({ url, headers, body });
      return { status: outcome.statusCode, error: outcome.statusCode === null ? outcome.error : null, durationMs: outcome.durationMs };
    },
    close: () => sender.close(),
  };
}

/**
 * Whether something accepts TCP connections at the URL's host and port: null when it does, else
 * why not, in words. One connection, closed at once; it says nothing of what answers there.
 */
export function connectProblem(url: string, timeoutMs: number): Promise<string | null> {
  const target = new URL(url);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (problem: string | null) => {
      socket.destroy();
      resolve(problem);
    };
    socket.once('connect', () => done(null));
    socket.once('timeout', () => done(`no connection to ${host}:${port} within ${timeoutMs} ms`));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      const reason =
        error.code === 'ECONNREFUSED' ? `connection refused: nothing listens on ${host}:${port}`
        : error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN' ? `the host ${host} cannot be resolved`
        : `${error.code ?? 'error'}: ${error.message}`;
      done(reason);
    });
  });
}
