import { randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { pack } from 'msgpackr';
import { entryOf, packed, recordKey, type ChangelogRecord } from './changelog-entries.js';
import { LOG_TOKEN, type ChangelogReader, type PartitionRead } from './changelog-read.js';
import { PUBLISH_TRIES } from './changelog-snapshot.js';
import { HooklineError } from '../errors.js';

/**
 * The write side of a partition's changelog (`PartitionChangelog`): appends grouped into batches,
 * one in flight per partition, each conditional on the subject's last batch as this node saw it,
 * and the fence that ends a holder's restore.
 */

/** A batch's header naming its writer and the batch: `<writer id>.<process>.<batch number>`. */
const BATCH_HEADER = 'Hookline-Batch';

/**
 * Who appends to the changelog: its batches carry its id, and, when the subject's last batch is
 * another writer's, it is asked whether it holds the partition still.
 */
export interface ChangelogWriter {
  id: string;
  /** Asked of the lease bucket, not the local clock: a node cut off from NATS trusts its clock too long. */
  holdsPartition(partition: number): Promise<boolean>;
}

/**
 * The one entry of a fence, the batch that ends a holder's restore: its kind token is none a reader
 * knows (this version's or an earlier one's), so every restore skips it.
 */
const FENCE_BATCH = pack(['fence', '', {}]);

/** How many times a restore tries to fence the batches it read (each refusal reads on first). */
const FENCE_TRIES = 5;

/** A writer that is never confirmed as the holder: it appends only over its own batches. */
export const anonymousWriter = (): ChangelogWriter => ({ id: randomUUID(), holdsPartition: async () => false });

/** Room left in a message for its headers, below the server's max_payload. */
const HEADER_ROOM_BYTES = 4096;

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** One partition's appends: those waiting for the next batch, and where its subject stands. */
export interface PartitionLog {
  partition: number;
  /**
   * Packed entries for the next batch by record key (records appended together: their keys
   * joined); a later version replaces an earlier one. An entry is never split across messages.
   */
  waiting: Map<string, Buffer>;
  waiters: Waiter[];
  /** Where the partition's batches go: `<prefix>.<partition>.log`. */
  subject: string;
  /** Whether this node holds the partition's lease now (from the latest append). */
  stillHeld: () => boolean;
  flushing: boolean;
  /** Sequence of the partition's last batch as this node saw it (0: none); undefined: not known. */
  lastSequence: number | undefined;
  /** Sequence of the partition's last snapshot marker as this node saw it (0: none). */
  markerSequence: number;
  /** Entries stored in batches after the snapshot in force, and records in that snapshot. */
  entriesSinceSnapshot: number;
  snapshotEntries: number;
  compacting: boolean;
  /**
   * First sequence that may hold a batch of another writer since this node's restore (it found the
   * subject written since: a previous owner's late batch, or its own batch whose ack was lost).
   * This node's LMDB may lack that batch's records, so a snapshot from LMDB covers no batch from
   * here on: restores go on reading them, until the partition moves and a restore folds them in.
   */
  foreignFrom: number | undefined;
  /**
   * Released here (`PartitionChangelog.forget`) and not restored since: nothing more is published
   * for it. Before, a batch left waiting behind a stalled publish went out after the release with
   * no condition at all (the subject's position was forgotten), and laid a stale ingest over the
   * next owner's newer one (nemesis, seed 2 for 30 min: four acknowledged deliveries replaced).
   */
  released: boolean;
}

/** A partition's log as nothing is known of it yet: its subject not read, nothing waiting. */
export function newPartitionLog(partition: number, subject: string): PartitionLog {
  return {
    partition,
    subject,
    waiting: new Map(),
    waiters: [],
    stillHeld: () => false,
    flushing: false,
    lastSequence: undefined,
    markerSequence: 0,
    entriesSinceSnapshot: 0,
    snapshotEntries: 0,
    compacting: false,
    foreignFrom: undefined,
    released: false,
  };
}

/** Sends each partition's appends as batches, and fences a holder's restore. */
export class BatchAppender {
  /** Partitions with appends for the next turn's batches. */
  private readonly due = new Set<PartitionLog>();
  /** Batches this writer has published (the number in each one's BATCH_HEADER). */
  private batchesPublished = 0;
  /**
   * This process's part of a batch's id: a node restarted under its id numbers its batches from 1
   * again, and a late batch of its previous process must not pass for one of this process's.
   */
  private readonly incarnation = randomUUID().slice(0, 8);

  constructor(
    private readonly connection: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly reader: ChangelogReader,
    private readonly writer: ChangelogWriter,
  ) {}

  /**
   * `append` for records that must never be stored one without the other (an event and the
   * delivery made with it): they go in the same message, so a restore finds both or neither.
   */
  appendTogether(log: PartitionLog, changes: readonly ChangelogRecord[], stillHeld: () => boolean): Promise<void> {
    if (log.released) return Promise.reject(releasedError(log.partition));
    const key = changes.map(recordKey).join(' ');
    // Packed now: the caller's record may change after this call, the version appended may not.
    const entry = changes.length === 1 ? pack(entryOf(changes[0]!)) : Buffer.concat([...packed(changes)]);
    // Deleted first, so the entry moves to the end: a record appended alone and again with others
    // has its latest version last in the batch, whichever key held it.
    log.waiting.delete(key);
    log.waiting.set(key, entry);
    log.stillHeld = stillHeld;
    const stored = new Promise<void>((resolve, reject) => log.waiters.push({ resolve, reject }));
    // The next turn, not now: every append of the commit that resolved in this turn joins the batch.
    // One turn for every partition: their publishes leave in one write to the socket.
    if (!log.flushing && log.waiters.length === 1) {
      if (this.due.size === 0) setImmediate(() => this.flushDue());
      this.due.add(log);
    }
    return stored;
  }

  private flushDue(): void {
    for (const log of this.due) void this.flush(log);
    this.due.clear();
  }

  /** Refuses what waits for the partition's next batch, and all it is handed until it is restored here again. */
  release(log: PartitionLog): void {
    log.released = true;
    const waiters = log.waiters;
    log.waiting = new Map();
    log.waiters = [];
    for (const waiter of waiters) waiter.reject(releasedError(log.partition));
  }

  /** Sends what waits as batches until nothing does; every waiter learns its batch's outcome. */
  private async flush(log: PartitionLog): Promise<void> {
    if (log.flushing) return;
    log.flushing = true;
    while (log.waiters.length > 0) {
      const entries = [...log.waiting.values()];
      const waiters = log.waiters;
      log.waiting = new Map();
      log.waiters = [];
      try {
        for (const batch of this.batches(entries)) await this.publishBatch(log, batch);
        log.entriesSinceSnapshot += entries.length;
        for (const waiter of waiters) waiter.resolve();
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    log.flushing = false;
  }

  /** The entries as messages the server takes (several only when they exceed one). */
  private *batches(entries: Iterable<Buffer>): Generator<Buffer> {
    const limit = this.payloadLimit();
    let parts: Buffer[] = [];
    let bytes = 0;
    for (const part of entries) {
      if (bytes > 0 && bytes + part.length > limit) {
        yield Buffer.concat(parts, bytes);
        parts = [];
        bytes = 0;
      }
      parts.push(part);
      bytes += part.length;
    }
    if (bytes > 0) yield Buffer.concat(parts, bytes);
  }

  /** Bytes of entries a message may hold: the server's max_payload less room for headers. */
  payloadLimit(): number {
    return Math.max(HEADER_ROOM_BYTES, this.maxPayload() - HEADER_ROOM_BYTES);
  }

  /** The server's max_payload (its default before the connection says). */
  maxPayload(): number {
    return this.connection.info?.max_payload ?? 1024 * 1024;
  }

  /**
   * Publishes a batch on the condition that the subject's last batch is the one this node saw.
   * When it is not, the last batch is read: this very batch, stored after all (a retry after a
   * timeout whose answer was lost), is done; another writer's is appended after only when the lease
   * bucket says this node holds the partition, so that it is a previous owner's late batch. Asked of
   * the local clock alone, a node cut off from NATS still believed it held the partition after
   * another had taken it over, and appended its stale ingest after the new owner's: a restore then
   * kept the wrong one of two deliveries of one event (docs/nemesis.md, finding 2).
   */
  private async publishBatch(log: PartitionLog, data: Buffer): Promise<void> {
    if (log.released) throw releasedError(log.partition);
    const subject = log.subject;
    const expected = log.lastSequence;
    const { batchId, headers } = this.nextBatch();
    try {
      // Retried on a timeout: a replicated stream electing a new leader answers nothing for a moment.
      // A retry of a batch that was stored after all finds the subject written, and is handled below.
      log.lastSequence = (await this.js.publish(subject, data, { headers, retries: PUBLISH_TRIES, ...(expected !== undefined ? { expect: { lastSubjectSequence: expected } } : {}) })).seq;
    } catch (error) {
      if (!isWrongLastSequence(error) || !log.stillHeld()) throw error;
      const last = await this.reader.lastBatch(log.partition);
      if (last?.header?.get(BATCH_HEADER) === batchId) {
        log.lastSequence = last.seq;
        return;
      }
      if (!(await this.writer.holdsPartition(log.partition))) throw error;
      log.foreignFrom ??= (expected ?? 0) + 1;
      log.lastSequence = (await this.js.publish(subject, data, { headers, retries: PUBLISH_TRIES, expect: { lastSubjectSequence: last?.seq ?? 0 } })).seq;
    }
  }


  /** The next batch's id and its headers. */
  private nextBatch(): { batchId: string; headers: ReturnType<typeof natsHeaders> } {
    const batchId = `${this.writer.id}.${this.incarnation}.${++this.batchesPublished}`;
    const headers = natsHeaders();
    headers.set(BATCH_HEADER, batchId);
    return { batchId, headers };
  }

  /**
   * Ends a holder's restore with a batch of its own, conditional on the last batch the read met.
   * From then on a previous owner's late batch (conditional on an earlier one) is refused and its
   * write never acknowledged. Before, one stored between the read and this node's first append
   * stayed in the stream, yet was never restored here; nor were the batches a replica behind the
   * stream's leader had not yet when it served the read (docs/nemesis.md, finding 8). So the read
   * first goes on through the last batch the leader holds, and again after each refusal.
   */
  async fence(partition: number, state: PartitionRead, visit: (change: ChangelogRecord) => void, between: () => Promise<unknown>): Promise<void> {
    for (let tries = 1; ; tries++) {
      await this.reader.readBatchesThrough(partition, state, await this.reader.lastBatchSequence(partition), visit, between);
      try {
        const { headers } = this.nextBatch();
        state.lastBatch = (await this.js.publish(this.reader.subjectOf(partition, LOG_TOKEN), FENCE_BATCH, { headers, retries: PUBLISH_TRIES, expect: { lastSubjectSequence: state.lastBatch } })).seq;
        state.entriesAfterSnapshot += 1;
        return;
      } catch (error) {
        // Written since (or this fence stored, its answer lost): read on and fence again.
        if (!isWrongLastSequence(error) || tries >= FENCE_TRIES) throw error;
      }
    }
  }
}

/** JetStream's "wrong last sequence" (API error 10071): the subject was written since. */
function isWrongLastSequence(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10071 || /wrong last sequence/i.test(String(message));
}

/** An append to a partition this node released: not stored, and retried by the caller as any refused write is. */
function releasedError(partition: number): HooklineError {
  return new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `partition ${partition} was released by this node; the change was not appended to its changelog`, { retryAfterSeconds: 1 });
}
