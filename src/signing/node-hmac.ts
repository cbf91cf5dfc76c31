import { createHmac, timingSafeEqual } from 'node:crypto';
import type { HmacBackend } from './backend.js';

/** The fast path: node:crypto hashes in native code and streams the body without copying it. */
export const nodeHmacBackend = {
  name: 'node',
  sign(key: Uint8Array, id: string, timestamp: string, body: string | Uint8Array): Uint8Array {
    return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  },
  equal(a: Uint8Array, b: Uint8Array): boolean {
    return a.length === b.length && timingSafeEqual(a, b);
  },
} as const satisfies HmacBackend;
