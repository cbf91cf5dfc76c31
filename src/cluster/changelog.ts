import { DeliverPolicy, RetentionPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureStream, reachJetStream, type SetupLog } from '../transport/nats-streams.js';
import { pack, unpack, unpackMultiple } from 'msgpackr';
import { withChanges } from '../store/delivery-model.js';
import type { DeliveryChange, DeliveryRecord, EventRecord, WebhookRecord } from '../store/records.js';

/**
 * Each partition's state as a JetStream changelog. A node taking a partition over reads the
 * partition's messages in stream order, keeps the last version of every record, and has the
 * partition's state.
 *
 * Format: one message per batch on `<prefix>.<partition>.log`, holding the records appended since
 * the previous batch (a msgpack sequence of `[kind token, projectId, record]`). A partition has at
 * most one batch in flight; appends made meanwhile wait and go out together as the next one (a
 * group commit), so the records of one LMDB commit cost JetStream one stored message and the
 * client one request, not one each (in the profile of issue 12, the per-request cost of the NATS
 * client and the server's per-message work were the largest share of a cluster node's CPU). Two
 * versions of one record in the same batch are sent once, as the later. Records appended together
 * (`appendTogether`: an event and its delivery) share a message even when a batch takes several.
 *
 * Earlier versions wrote one message per record on `<prefix>.<partition>.<kind>.<projectId>[.<id>]`,
 * one kept per subject; a restore reads those too, and a stream made then is widened to keep every
 * batch (its per-subject limit of 1 would keep only the last).
 *
 * Fencing: a batch is conditional on the partition subject's last sequence as this node last saw
 * it (JetStream's expected-last-subject-sequence): a batch that a node cut off from NATS issued
 * while it held the lease, and that reaches the server only after another node took over and
 * appended, is refused instead of putting older versions after newer ones.
 *
 * A delivery is appended whole once (ingest, replay), then as its steps (`steps`: what each commit
 * added, keyed by the index of its first transition), so that a step costs neither a read of the
 * record nor its whole history on the wire; a restore applies a delivery's steps to its record.
 *
 * Known limit: the subject keeps every batch, so a restore reads every version ever appended (the
 * earlier format read every record ever appended, once each); bounding it needs a snapshot.
 */

export type ChangelogRecord =
  | { kind: 'delivery'; projectId: string; record: DeliveryRecord }
  | { kind: 'event'; projectId: string; record: EventRecord }
  | { kind: 'webhook'; projectId: string; record: WebhookRecord }
  | { kind: 'steps'; projectId: string; record: DeliverySteps };

/** Steps of one delivery committed together, in order. */
export interface DeliverySteps {
  id: string;
  changes: readonly DeliveryChange[];
}

/** What a restore hands on: records, a delivery's steps applied to it. */
export type RestoredChange = Exclude<ChangelogRecord, { kind: 'steps' }>;

const KIND_TOKEN = { delivery: 'd', event: 'e', webhook: 'w', steps: 's' } as const;
const TOKEN_KIND = { d: 'delivery', e: 'event', w: 'webhook', s: 'steps' } as const;
type KindToken = keyof typeof TOKEN_KIND;

/** Last token of the subject holding a partition's batches (not a kind token of the old format). */
const LOG_TOKEN = 'log';

/** Tries of one batch's publish that times out (a JetStream leader change) before its waiters hear of it. */
const PUBLISH_TRIES = 3;

/** Room left in a message for its headers, below the server's max_payload. */
const HEADER_ROOM_BYTES = 4096;

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** One partition's appends: those waiting for the next batch, and where its subject stands. */
interface PartitionLog {
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
}

export class PartitionChangelog {
  private readonly js: JetStreamClient;
  private manager: JetStreamManager | null = null;
  private readonly logs = new Map<number, PartitionLog>();
  /** Partitions with appends for the next turn's batches. */
  private readonly due = new Set<PartitionLog>();

  constructor(
    private readonly connection: NatsConnection,
    readonly stream: string,
    readonly subjectPrefix: string,
  ) {
    this.js = jetstream(connection);
  }

  /** Creates the stream with `replicas` when absent (safe from several nodes at once). */
  async ensureStream(replicas = 1, log?: SetupLog): Promise<void> {
    const manager = await this.jsm(log);
    const info = await ensureStream(manager, { name: this.stream, subjects: [`${this.subjectPrefix}.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, max_msgs_per_subject: -1, num_replicas: replicas }, log);
    if (info.config.max_msgs_per_subject > 0) {
      await manager.streams.update(this.stream, { max_msgs_per_subject: -1 });
    }
  }

  private async jsm(log?: SetupLog): Promise<JetStreamManager> {
    this.manager ??= await reachJetStream(this.connection, log);
    return this.manager;
  }

  private logOf(partition: number): PartitionLog {
    let log = this.logs.get(partition);
    if (!log) {
      log = { subject: `${this.subjectPrefix}.${partition}.${LOG_TOKEN}`, waiting: new Map(), waiters: [], stillHeld: () => false, flushing: false, lastSequence: undefined };
      this.logs.set(partition, log);
    }
    return log;
  }

  /**
   * Resolves once JetStream has stored the change, in this batch or a later one (a node may die
   * right after). Versions of one record are stored in the order they were appended: a partition's
   * batches go out one at a time, each holding the latest version appended before it left.
   *
   * `stillHeld` says whether this node holds the partition's lease now. When a batch finds the
   * partition written since (a previous owner's late batch, or this node's own batch whose ack was
   * lost), a holder's batch wins: it is appended again over the current last sequence.
   */
  append(partition: number, change: ChangelogRecord, stillHeld: () => boolean): Promise<void> {
    return this.appendTogether(partition, [change], stillHeld);
  }

  /**
   * `append` for records that must never be stored one without the other (an event and the
   * delivery made with it): they go in the same message, so a restore finds both or neither.
   */
  appendTogether(partition: number, changes: readonly ChangelogRecord[], stillHeld: () => boolean): Promise<void> {
    const log = this.logOf(partition);
    const key = changes.map(recordKey).join(' ');
    // Packed now: the caller's record may change after this call, the version appended may not.
    const packed = changes.length === 1 ? pack(entryOf(changes[0]!)) : Buffer.concat(changes.map((change) => pack(entryOf(change))));
    // Deleted first, so the entry moves to the end: a record appended alone and again with others
    // has its latest version last in the batch, whichever key held it.
    log.waiting.delete(key);
    log.waiting.set(key, packed);
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
        for (const waiter of waiters) waiter.resolve();
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    log.flushing = false;
  }

  /** The entries as messages the server takes (several only when they exceed one). */
  private *batches(entries: Buffer[]): Generator<Buffer> {
    const limit = Math.max(HEADER_ROOM_BYTES, (this.connection.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM_BYTES);
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

  private async publishBatch(log: PartitionLog, data: Buffer): Promise<void> {
    const subject = log.subject;
    const expected = log.lastSequence;
    try {
      // Retried on a timeout: a replicated stream electing a new leader answers nothing for a moment.
      // A retry of a batch that was stored after all finds the subject written, and is handled below.
      log.lastSequence = (await this.js.publish(subject, data, { retries: PUBLISH_TRIES, ...(expected !== undefined ? { expect: { lastSubjectSequence: expected } } : {}) })).seq;
    } catch (error) {
      if (!isWrongLastSequence(error) || !log.stillHeld()) throw error;
      const last = await (await this.jsm()).streams.getMessage(this.stream, { last_by_subj: subject }).catch(() => null);
      log.lastSequence = (await this.js.publish(subject, data, { retries: PUBLISH_TRIES, expect: { lastSubjectSequence: last?.seq ?? 0 } })).seq;
    }
  }

  /**
   * Every record of the partition, latest version each, handed to `apply`; resolves with their
   * count once every `apply` has. The applies run together, so the store commits them in a few
   * transactions rather than one each.
   */
  async restore(partition: number, apply: (change: RestoredChange) => Promise<void> | void): Promise<number> {
    this.forget(partition);
    const log = this.logOf(partition);
    const consumer = await this.js.consumers.get(this.stream, { filter_subjects: `${this.subjectPrefix}.${partition}.>`, deliver_policy: DeliverPolicy.All });
    const info = await consumer.info();
    let lastSequence = 0;
    const latest = new Map<string, ChangelogRecord>();
    if (info.num_pending > 0) {
      const messages = await consumer.consume();
      // Stopped however the read ends: an ordered consumer left running recreates itself on the
      // server each time its heartbeats go missing.
      try {
        for await (const message of messages) {
          const tokens = message.subject.slice(this.subjectPrefix.length + 1).split('.');
          if (tokens[1] === LOG_TOKEN) {
            for (const entry of unpackMultiple(message.data) as unknown[]) {
              const change = decodeEntry(entry);
              if (change) latest.set(recordKey(change), change);
            }
            lastSequence = message.seq;
          } else {
            const change = decodeEntry([tokens[1], tokens[2], unpack(message.data)]);
            if (change) latest.set(recordKey(change), change);
          }
          if (message.info.pending === 0) break;
        }
      } finally {
        messages.stop();
      }
    }
    const records = withoutTakenBack(withSteps(latest.values()));
    await Promise.all(records.map((change) => apply(change)));
    log.lastSequence = lastSequence;
    return records.length;
  }

  /** Drops what this node knew of a partition's subject (it no longer holds it). */
  forget(partition: number): void {
    const log = this.logs.get(partition);
    if (log) log.lastSequence = undefined;
  }
}

/** A record as a batch holds it: `[kind token, projectId, record]`. */
function entryOf(change: ChangelogRecord): [KindToken, string, unknown] {
  return [KIND_TOKEN[change.kind], change.projectId, change.record];
}

/** Identifies a record within its partition: two versions of it share the key (steps: the same first transition). */
function recordKey(change: ChangelogRecord): string {
  if (change.kind === 'webhook') return `w.${change.projectId}`;
  const key = `${KIND_TOKEN[change.kind]}.${change.projectId}.${change.record.id}`;
  return change.kind === 'steps' ? `${key}.${change.record.changes[0]?.transitionIndex ?? 0}` : key;
}

/**
 * The records with each delivery's steps applied in transition order. Steps its record already
 * holds are skipped; a gap (steps whose append failed) ends them, so a record never skips a step
 * (the writer appends the whole record after such a failure). Steps without a record are dropped.
 */
function withSteps(changes: Iterable<ChangelogRecord>): RestoredChange[] {
  const records: RestoredChange[] = [];
  const steps = new Map<string, DeliveryChange[]>();
  for (const change of changes) {
    if (change.kind !== 'steps') records.push(change);
    else {
      const key = `${change.projectId}.${change.record.id}`;
      const list = steps.get(key);
      if (list) list.push(...change.record.changes);
      else steps.set(key, [...change.record.changes]);
    }
  }
  return records.map((change) => {
    const list = change.kind === 'delivery' ? steps.get(`${change.projectId}.${change.record.id}`) : undefined;
    if (!list || change.kind !== 'delivery') return change;
    list.sort((a, b) => a.transitionIndex - b.transitionIndex);
    let next = change.record.transitions.length;
    const contiguous: DeliveryChange[] = [];
    for (const step of list) {
      if (step.transitionIndex < next) continue;
      if (step.transitionIndex > next) break;
      contiguous.push(step);
      next += step.transitions.length;
    }
    return { ...change, record: withChanges(change.record, contiguous) };
  });
}

/**
 * The records less the deliveries of ingests that were taken back. An append whose answer never
 * came (it timed out) may be stored all the same, while the node took its event back and answered
 * 503; the sender's retry then made the event anew, with a new delivery. An event's latest version
 * lists every delivery made for it (an ingest's, then each replay's), so a delivery that its
 * restored event does not list is such a leftover: restored, it would be sent again under another
 * `webhook-id`. A delivery whose event is not in the changelog is kept.
 */
function withoutTakenBack(records: RestoredChange[]): RestoredChange[] {
  const deliveriesOf = new Map<string, readonly string[]>();
  for (const change of records) if (change.kind === 'event') deliveriesOf.set(`${change.projectId}.${change.record.id}`, change.record.deliveryIds);
  return records.filter((change) => change.kind !== 'delivery' || (deliveriesOf.get(`${change.projectId}.${change.record.eventId}`)?.includes(change.record.id) ?? true));
}

/** A `[kind token, projectId, record]` entry as a change, or null when it is not one. */
function decodeEntry(entry: unknown): ChangelogRecord | null {
  if (!Array.isArray(entry) || entry.length !== 3) return null;
  const [token, projectId, record] = entry as [unknown, unknown, unknown];
  const kind = TOKEN_KIND[token as KindToken];
  if (!kind || typeof projectId !== 'string' || projectId === '' || record === null || typeof record !== 'object') return null;
  if (kind === 'steps' && !(Array.isArray((record as DeliverySteps).changes) && (record as DeliverySteps).changes.length > 0)) return null;
  return { kind, projectId, record } as ChangelogRecord;
}

/** JetStream's "wrong last sequence" (API error 10071): the subject was written since. */
function isWrongLastSequence(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10071 || /wrong last sequence/i.test(String(message));
}
