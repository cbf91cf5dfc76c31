import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Database } from 'lmdb';
import type { RestoredRecord } from './changelog-restore.js';
import type { DeliveryTables } from './delivery-tables.js';
import type { DeliveryHead, DeliveryRecord, EventRecord, ProjectRecord, WebhookRecord } from './records.js';

/** A record of a partition as LMDB holds it, with its project (a changelog snapshot's entry). */
export type PartitionRecord = RestoredRecord & { projectId: string };

/** The tables a partition's records are read from (a `HooklineStore`'s). */
export interface PartitionTables {
  readonly projects: Database<ProjectRecord, string>;
  readonly webhooks: Database<WebhookRecord, string>;
  readonly events: Database<EventRecord, [string, string]>;
  readonly deliveries: Database<DeliveryHead, [string, string]>;
  readonly deliveryTables: DeliveryTables;
}

/** Which records to read, and how many at a time. */
export interface PartitionReadOptions {
  /** Whether a project lies in the partition. */
  owns(projectId: string): boolean;
  /** Deliveries left out (past retention), judged from the head before the record is assembled. */
  leaveOut(delivery: Pick<DeliveryRecord, 'id' | 'status'>): boolean;
  /** Records per chunk. */
  chunk: number;
}

/**
 * The partition's records, a bounded chunk at a time: each owned project's webhook, events, then
 * deliveries (assembled whole, with every step LMDB holds). Each chunk is a read of its own from the
 * key after the previous chunk's last, with a turn of the event loop between: no read transaction
 * is held across chunks (an old one keeps LMDB from reusing pages), and the partition is never in
 * memory at once (the snapshot of 1,000,000 deliveries read whole left a node at 2.3 GB RssAnon).
 * A chunk reads what LMDB holds then: never older than what was committed before the read began.
 * Counts the deliveries left out in `leftOut`.
 */
export async function* readPartitionRecords(tables: PartitionTables, options: PartitionReadOptions, counts: { leftOut: number }): AsyncGenerator<PartitionRecord[]> {
  const projectIds = [...tables.projects.getKeys()].filter((projectId) => options.owns(projectId));
  for (const projectId of projectIds) {
    const webhook = tables.webhooks.get(projectId);
    if (webhook) yield [{ kind: 'webhook', projectId, record: webhook }];
    yield* chunksOf(tables.events, projectId, options.chunk, (record) => ({ kind: 'event', projectId, record }));
    yield* chunksOf(tables.deliveries, projectId, options.chunk, (head) => {
      if (!options.leaveOut(head)) return { kind: 'delivery', projectId, record: tables.deliveryTables.assemble(projectId, head) };
      counts.leftOut++;
      return null;
    });
  }
}

/** One project's values of a `[projectId, id]` table as records, `size` keys a read. */
async function* chunksOf<V>(table: Database<V, [string, string]>, projectId: string, size: number, toRecord: (value: V) => PartitionRecord | null): AsyncGenerator<PartitionRecord[]> {
  let after: string | null = null;
  for (;;) {
    const chunk: PartitionRecord[] = [];
    let read = 0;
    for (const { key, value } of table.getRange({ start: [projectId, after ?? ''], end: [projectId, '\uffff'], limit: size + 1 })) {
      if (after !== null && key[1] === after) continue;
      if (read === size) break;
      read++;
      after = key[1];
      const record = toRecord(value);
      if (record) chunk.push(record);
    }
    if (chunk.length > 0) yield chunk;
    if (read < size) return;
    await nextTurn();
  }
}
