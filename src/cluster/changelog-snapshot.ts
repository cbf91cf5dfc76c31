import type { JetStreamClient } from '@nats-io/jetstream';
import { pack } from 'msgpackr';
import { entryOf, type ChangelogRecord } from './changelog-entries.js';

/** Tries of one publish that times out (a JetStream leader change) before its caller hears of it. */
export const PUBLISH_TRIES = 3;

/** Where a snapshot's messages lie, and how many records they hold (sequences both 0: none). */
export interface SnapshotWritten {
  from: number;
  to: number;
  records: number;
}

/**
 * Publishes the chunks as snapshot messages on `subject`, each filled up to `limit` bytes before it
 * goes (a chunk's entries packed as it comes: packing a partition at once held the event loop
 * for half a second per 60,000 records, bench:changelog). Null once `stillHeld` fails: a stop or
 * a lost lease abandons the snapshot within a message's time, whatever the partition's size.
 */
export async function publishSnapshot(js: JetStreamClient, subject: string, limit: number, records: AsyncIterable<readonly ChangelogRecord[]>, stillHeld: () => boolean): Promise<SnapshotWritten | null> {
  const written = { from: 0, to: 0, records: 0 };
  let parts: Buffer[] = [];
  let bytes = 0;
  const send = async (): Promise<boolean> => {
    if (!stillHeld()) return false;
    written.to = (await js.publish(subject, Buffer.concat(parts, bytes), { retries: PUBLISH_TRIES })).seq;
    written.from ||= written.to;
    parts = [];
    bytes = 0;
    return true;
  };
  for await (const chunk of records) {
    if (!stillHeld()) return null;
    for (const change of chunk) {
      const part = pack(entryOf(change));
      if (bytes > 0 && bytes + part.length > limit && !(await send())) return null;
      parts.push(part);
      bytes += part.length;
      written.records++;
    }
  }
  if (bytes > 0 && !(await send())) return null;
  return written;
}
