import { randomBytes } from 'node:crypto';

/**
 * Fastify's `genReqId`: ids unique across restarts and nodes, so the `reqId` a 500 answer names
 * finds one log line. Fastify's own (`req-1`, `req-2`…) start again with every process. A random
 * prefix per server and a counter: no random bytes per request.
 */
export function requestIdGenerator(): () => string {
  const prefix = randomBytes(5).toString('hex');
  let count = 0;
  return () => `${prefix}-${(++count).toString(36)}`;
}
