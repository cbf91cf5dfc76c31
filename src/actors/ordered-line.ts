import { isTerminalDelivery } from '../machines/index.js';
import type { LiveDelivery } from './live-delivery.js';

/**
 * Ordered (`fifo`) delivery keeps a project's live deliveries in a line: the live deliveries
 * (live-index.ts) in the order they were taken in (ingest order; a redriven, retried or replayed delivery joins at
 * the tail). Only the head, the first one not yet terminal, may be attempted, alone.
 */

/** The first live delivery that is not terminal (terminal ones stay until their last step is stored). */
export function lineHead(live: { values(): Iterable<LiveDelivery> }): LiveDelivery | undefined {
  for (const delivery of live.values()) if (!isTerminalDelivery(delivery.status)) return delivery;
  return undefined;
}

const ID_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A delivery id after `last`: `fresh` when it sorts after it, else `last` plus one in its last
 * characters (ids made in the same millisecond are random beyond the time, so they alone would not
 * keep ingest order).
 */
export function nextDeliveryId(fresh: string, last: string): string {
  if (fresh > last) return fresh;
  // One string built at the end: at thousands of events a second most ids come here.
  for (let i = last.length - 1; i > last.indexOf('_'); i--) {
    const digit = ID_ALPHABET.indexOf(last[i]!);
    if (digit < ID_ALPHABET.length - 1) return last.slice(0, i) + ID_ALPHABET[digit + 1]! + ID_ALPHABET[0]!.repeat(last.length - 1 - i);
  }
  return fresh;
}
