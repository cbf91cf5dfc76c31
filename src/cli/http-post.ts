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
 */
export function createPoster(url: string, timeoutMs: number): Poster {
  const sender = new HttpSender({ timeoutMs, maxConnectionsPerOrigin: 4 });
  return {
    async post(headers, body) {
      const outcome = await sender.send({ url, headers, body });
      return { status: outcome.statusCode, error: outcome.statusCode === null ? outcome.error : null, durationMs: outcome.durationMs };
    },
    close: () => sender.close(),
  };
}
