import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { HooklineError } from '../errors.js';
import type { HooklineErrorCode } from '../errors.js';

/** Node's codes for requests its HTTP parser refuses, as ours; any other is a malformed request. */
const NODE_CLIENT_ERRORS: Record<string, HooklineErrorCode> = {
  HPE_HEADER_OVERFLOW: 'HOOKLINE_ERR_HEADERS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'HOOKLINE_ERR_REQUEST_TIMEOUT',
};

/**
 * Answers a request Node could not parse (its `clientError`), before Fastify sees it: in the error
 * shape of every other answer rather than Fastify's own, and then closes the connection, which is
 * in an unknown state.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // Reset by the peer, or already answered: there is no one to tell.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code = NODE_CLIENT_ERRORS[error.code ?? ''] ?? 'HOOKLINE_ERR_MALFORMED_REQUEST';
  const refusal = new HooklineError(code, `the request was refused before any route: ${error.code ?? error.message}`);
  const body = JSON.stringify(refusal.toJSON());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
