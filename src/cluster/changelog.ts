import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeliverPolicy, RetentionPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureStream, reachJetStream, type SetupLog } from '../transport/nats-streams.js';
import { pack, unpack, unpackMultiple } from 'msgpackr';
import { DEFAULT_CHANGELOG_SNAPSHOT_EVERY } from '../config/settings.js';
import { withChanges } from '../store/delivery-model.js';
import type { ChangelogEntry, DeliverySteps } from '../store/changelog-restore.js';
import type { DeliveryChange, DeliveryRecord } from '../store/records.js';

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
 * Snapshots (`compact`): the holder folds the batches up to its last one into a snapshot (the
 * latest version of every record, a delivery's steps applied, less the deliveries past retention) on
 * `<prefix>.<partition>.snap`, then names it with a marker on `<prefix>.<partition>.snapped`
 * (`SnapshotMarker`). A restore reads the marked snapshot and the batches after the last batch it
 * covers, not the whole history. What a snapshot replaced is purged one snapshot later: a node that
 * read the previous marker and is still restoring from it finds everything it needs.
 */

export type ChangelogRecord = ChangelogEntry;
export type { DeliverySteps };

/** What a restore hands on: records, a delivery's steps applied to it. */
export type RestoredChange = Exclude<ChangelogRecord, { kind: 'steps' }>;

const KIND_TOKEN = { delivery: 'd', event: 'e', webhook: 'w', steps: 's' } as const;
const TOKEN_KIND = { d: 'delivery', e: 'event', w: 'webhook', s: 'steps' } as const;
type KindToken = keyof typeof TOKEN_KIND;

/** Last tokens of a partition's subjects (none a kind token of the old format): batches, snapshots, markers. */
const LOG_TOKEN = 'log';
const SNAPSHOT_TOKEN = 'snap';
const MARKER_TOKEN = 'snapped';

/** Where a partition's snapshot lies (a marker's message, msgpack). */
interface SnapshotMarker {
  /** Sequences of the snapshot's first and last message (both 0: an empty snapshot). */
  from: number;
  to: number;
  /** Sequence of the last batch folded into it: a restore reads the batches after it. */
  covers: number;
}

/** A marker as read back, with the sequence of its message (the next marker is conditional on it). */
interface StoredMarker {
  sequence: number;
  marker: SnapshotMarker;
}

/** Where a read of a partition's changelog ended. */
interface PartitionRead {
  /** Sequence of the partition's last batch (0: none). */
  lastBatch: number;
  /** Entries of the batches read after the snapshot. */
  entriesAfterSnapshot: number;
  /** Records in the snapshot read. */
  snapshotEntries: number;
  marker: StoredMarker | null;
}

/** What reading a partition's changelog into memory gives. */
interface PartitionState extends PartitionRead {
  /** Latest version of every record, by `recordKey`: the snapshot's, overlaid by the batches after it. */
  latest: Map<string, ChangelogRecord>;
}

/** What a compaction did. */
export interface Compaction {
  /** Sequence of the last batch folded in. */
  covers: number;
  /** Records in the snapshot. */
  records: number;
  /** Records left out: deliveries past retention, with their steps. */
  leftOut: number;
  /** Messages purged: what the previous snapshot replaced. */
  purged: number;
}

/** Tries of one batch's publish that times out (a JetStream leader change) before its waiters hear of it. */
const PUBLISH_TRIES = 3;

/**
 * Bytes a read asks for at a time. Unbounded, a pull of a hundred 1 MB batches put more than the
 * server's 64 MB of pending output to one client in flight; a busy reader was then cut off as a slow
 * consumer and its read waited for ever (the server counted every message delivered, the reader had
 * half).
 */
const READ_BYTES_PER_PULL = 8 * 1024 * 1024;

/**
 * Records a pass over a whole partition (a restore's, a snapshot's) handles in one turn of the event
 * loop: in one go, 30,000 deliveries with their steps held it for 200 ms (bench:changelog).
 */
const RECORDS_PER_TURN = 5_000;

/**
 * Chunks a restore into LMDB has handed on and not seen committed: bounded, so that a slow disk
 * holds back the read rather than let the partition pile up in memory.
 */
const CHUNKS_APPLYING = 4;

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
  /** Sequence of the partition's last snapshot marker as this node saw it (0: none). */
  markerSequence: number;
  /** Entries stored in batches after the snapshot in force, and records in that snapshot. */
  entriesSinceSnapshot: number;
  snapshotEntries: number;
  compacting: boolean;
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
    /** Entries a partition's batches hold after its snapshot before the next is due, at the least (`HOOKLINE_CHANGELOG_SNAPSHOT_EVERY`). */
    private readonly snapshotEvery = DEFAULT_CHANGELOG_SNAPSHOT_EVERY,
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

  private subjectOf(partition: number, token: string): string {
    return `${this.subjectPrefix}.${partition}.${token}`;
  }

  private logOf(partition: number): PartitionLog {
    let log = this.logs.get(partition);
    if (!log) {
      log = {
        subject: this.subjectOf(partition, LOG_TOKEN),
        waiting: new Map(),
        waiters: [],
        stillHeld: () => false,
        flushing: false,
        lastSequence: undefined,
        markerSequence: 0,
        entriesSinceSnapshot: 0,
        snapshotEntries: 0,
        compacting: false,
      };
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
    const state = await this.read(partition);
    const records = withoutTakenBack(await withSteps(state.latest.values()));
    await Promise.all(records.map((change) => apply(change)));
    this.restored(partition, state);
    return records.length;
  }

  /**
   * `restore` without holding the partition in memory: hands `apply` the partition's entries as
   * appended (records and delivery steps), in chunks of about RECORDS_PER_TURN, in the order they
   * lie over each other (the snapshot, then the batches after it); `apply` keeps the latest version
   * of each (the store's `ChangelogRestore`). Up to CHUNKS_APPLYING chunks are applied while the next is read. Resolves
   * with the entries' count once every chunk is applied.
   */
  async restoreInto(partition: number, apply: (entries: ChangelogRecord[]) => Promise<void>): Promise<number> {
    this.forget(partition);
    let chunk: ChangelogRecord[] = [];
    let count = 0;
    const applying: Array<Promise<void>> = [];
    const handOn = async (): Promise<void> => {
      // A few chunks queued at once share one LMDB commit (and its fsync) when the disk is slow.
      while (applying.length >= CHUNKS_APPLYING) await applying.shift();
      if (chunk.length === 0) return;
      const applied = apply(chunk);
      // Awaited in turn or at the end; not an unhandled rejection meanwhile.
      applied.catch(() => {});
      applying.push(applied);
      chunk = [];
    };
    const state = await this.walk(partition, Number.POSITIVE_INFINITY, (change) => {
      chunk.push(change);
      count++;
    }, handOn);
    await handOn();
    for (const applied of applying) await applied;
    this.restored(partition, state);
    return count;
  }

  /** Where the partition's subject stands once restored here: the next batch and snapshot are conditional on it. */
  private restored(partition: number, state: PartitionRead): void {
    const log = this.logOf(partition);
    log.lastSequence = state.lastBatch;
    log.markerSequence = state.marker?.sequence ?? 0;
    log.entriesSinceSnapshot = state.entriesAfterSnapshot;
    log.snapshotEntries = state.snapshotEntries;
  }

  /**
   * The partition's records from its last snapshot and the batches after it; with `upTo`, only
   * batches up to that sequence (the snapshot is read whole).
   */
  private async read(partition: number, upTo = Number.POSITIVE_INFINITY): Promise<PartitionState> {
    const latest = new Map<string, ChangelogRecord>();
    const state = await this.walk(partition, upTo, (change) => latest.set(recordKey(change), change), nextTurn);
    return { ...state, latest };
  }

  /**
   * Hands `visit` every entry of the partition's last snapshot, then of the batches after the last
   * batch it covers (up to `upTo`), in that order: a later entry holds a newer version than an
   * earlier one of the same record (a batch stored while a snapshot was being written lies between
   * its messages, but the snapshot's subject is read first). `between` runs every RECORDS_PER_TURN
   * entries or so (a yield, or a chunk handed on).
   */
  private async walk(partition: number, upTo: number, visit: (change: ChangelogRecord) => void, between: () => Promise<unknown>): Promise<PartitionRead> {
    const marker = await this.lastMarker(partition);
    const state: PartitionRead = { lastBatch: marker?.marker.covers ?? 0, entriesAfterSnapshot: 0, snapshotEntries: 0, marker };
    const batch = (message: JsMsg): number => {
      const entries = visitBatch(message.data, visit);
      state.entriesAfterSnapshot += entries;
      state.lastBatch = message.seq;
      return entries;
    };
    if (!marker) {
      // Every message of the partition: batches, and records in the format of earlier versions.
      await this.readMessages(`${this.subjectPrefix}.${partition}.>`, 1, upTo, (message) => {
        const tokens = message.subject.slice(this.subjectPrefix.length + 1).split('.');
        if (tokens[1] === LOG_TOKEN) return batch(message);
        // A snapshot left unfinished (it has no marker) is not read, nor is a marker.
        if (tokens[1] === SNAPSHOT_TOKEN || tokens[1] === MARKER_TOKEN) return 0;
        const entries = visitEntries([[tokens[1], tokens[2], unpack(message.data)]], visit);
        state.entriesAfterSnapshot += entries;
        return entries;
      }, between);
    } else {
      if (marker.marker.to > 0) {
        await this.readMessages(this.subjectOf(partition, SNAPSHOT_TOKEN), marker.marker.from, marker.marker.to, (message) => {
          const entries = visitBatch(message.data, visit);
          state.snapshotEntries += entries;
          return entries;
        }, between);
      }
      await this.readMessages(this.subjectOf(partition, LOG_TOKEN), marker.marker.covers + 1, upTo, batch, between);
    }
    return state;
  }

  /**
   * Hands `visit` the messages on `filter` from sequence `from` up to `to` (or the last), in order;
   * `visit` answers how many records a message held.
   * A read from a start sequence through a subject wildcard was seen (NATS 2.9) to count a message
   * still pending at the partition's last one, and to wait for it for ever: only single subjects are
   * read from a start sequence.
   */
  private async readMessages(filter: string, from: number, to: number, visit: (message: JsMsg) => number, between: () => Promise<unknown>): Promise<void> {
    const consumer = await this.js.consumers.get(this.stream, { filter_subjects: filter, ...(from > 1 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from } : { deliver_policy: DeliverPolicy.All }) });
    if ((await consumer.info()).num_pending === 0) return;
    const messages = await consumer.consume({ max_bytes: READ_BYTES_PER_PULL });
    // Stopped however the read ends: an ordered consumer left running recreates itself on the
    // server each time its heartbeats go missing.
    try {
      // The messages of a pull (up to 8 MB) come in one turn of the event loop: the read yields
      // after every RECORDS_PER_TURN records (a restore's longest stall in bench:changelog fell from
      // 240-290 ms to about 140).
      let recordsThisTurn = 0;
      for await (const message of messages) {
        if (message.seq > to) break;
        recordsThisTurn += visit(message);
        if (message.info.pending === 0 || message.seq === to) break;
        if (recordsThisTurn >= RECORDS_PER_TURN) {
          recordsThisTurn = 0;
          await between();
        }
      }
    } finally {
      messages.stop();
    }
  }

  /** The partition's last snapshot marker, or null when it has none (a failed read throws: never "none"). */
  private async lastMarker(partition: number): Promise<StoredMarker | null> {
    const message = await (await this.jsm()).streams.getMessage(this.stream, { last_by_subj: this.subjectOf(partition, MARKER_TOKEN) });
    return message ? { sequence: message.seq, marker: unpack(message.data) as SnapshotMarker } : null;
  }

  /**
   * Whether the partition's batches since its snapshot hold as many entries as the snapshot has
   * records (and at least `snapshotEvery`): snapshots then cost at most about what the appends did.
   */
  snapshotDue(partition: number): boolean {
    const log = this.logs.get(partition);
    return log !== undefined && log.lastSequence !== undefined && !log.compacting && log.entriesSinceSnapshot >= Math.max(this.snapshotEvery, log.snapshotEntries);
  }

  /**
   * Writes a snapshot of the partition as of its last batch this node stored: every record's latest
   * version, each delivery with its steps applied, less the deliveries `expired` names. Only while
   * `stillHeld`; its marker is conditional on the last marker this node saw (at its restore or its
   * previous snapshot), so a node that lost the partition never names a snapshot over the owner's.
   * Then purges what the previous snapshot replaced. Null when the partition is not restored here,
   * a compaction of it runs, or the lease went meanwhile (a snapshot left unmarked is never read).
   */
  async compact(partition: number, expired: (record: DeliveryRecord) => boolean, stillHeld: () => boolean): Promise<Compaction | null> {
    const log = this.logs.get(partition);
    if (!log || log.lastSequence === undefined || log.compacting || !stillHeld()) return null;
    log.compacting = true;
    try {
      const covers = log.lastSequence;
      // Every batch up to `covers` is stored: those stored from now on count toward the next snapshot.
      const foldedEntries = log.entriesSinceSnapshot;
      const state = await this.read(partition, covers);
      // A marker this node has not seen: another node holds the partition now, or did meanwhile.
      if ((state.marker?.sequence ?? 0) !== log.markerSequence) return null;
      const { kept, leftOut } = await snapshotOf(state.latest.values(), expired);
      let from = 0;
      let to = 0;
      // Packed as the batches go out, not all first: packing a partition at once held the event loop
      // for half a second per 60,000 records (bench:changelog).
      for (const batch of this.batches(packed(kept))) {
        if (!stillHeld()) return null;
        to = (await this.js.publish(this.subjectOf(partition, SNAPSHOT_TOKEN), batch, { retries: PUBLISH_TRIES })).seq;
        from ||= to;
      }
      if (!stillHeld()) return null;
      const marker: SnapshotMarker = { from, to, covers };
      log.markerSequence = (await this.js.publish(this.subjectOf(partition, MARKER_TOKEN), pack(marker), { expect: { lastSubjectSequence: log.markerSequence } })).seq;
      log.entriesSinceSnapshot -= foldedEntries;
      log.snapshotEntries = kept.length;
      let purged = 0;
      // Nothing lies below sequence 1, and the server takes a purge below 1 for a purge of everything.
      if (state.marker && state.marker.marker.covers > 0 && stillHeld()) {
        purged = (await (await this.jsm()).streams.purge(this.stream, { filter: `${this.subjectPrefix}.${partition}.>`, seq: state.marker.marker.covers + 1 })).purged;
      }
      return { covers, records: kept.length, leftOut, purged };
    } finally {
      log.compacting = false;
    }
  }

  /** Drops what this node knew of a partition's subject (it no longer holds it). */
  forget(partition: number): void {
    const log = this.logs.get(partition);
    if (log) log.lastSequence = undefined;
  }
}

/** Hands `visit` the changes of a batch's entries; returns how many entries it read. */
function visitEntries(entries: unknown[], visit: (change: ChangelogRecord) => void): number {
  for (const entry of entries) {
    const change = decodeEntry(entry);
    if (change) visit(change);
  }
  return entries.length;
}

/** `visitEntries` for a batch message's data: a msgpack sequence of entries. */
function visitBatch(data: Uint8Array, visit: (change: ChangelogRecord) => void): number {
  return visitEntries(unpackMultiple(data) as unknown[], visit);
}

/** The changes packed as batch entries, one at a time. */
function* packed(changes: Iterable<ChangelogRecord>): Generator<Buffer> {
  for (const change of changes) yield pack(entryOf(change));
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
 * (the writer appends the whole record after such a failure). Steps without a record, and those
 * after a gap, are dropped, or handed to `unapplied` (a snapshot keeps them as they were).
 */
async function withSteps(changes: Iterable<ChangelogRecord>, unapplied?: (projectId: string, steps: DeliverySteps) => void): Promise<RestoredChange[]> {
  const records: RestoredChange[] = [];
  const steps = new Map<string, { projectId: string; id: string; changes: DeliveryChange[] }>();
  let count = 0;
  for (const change of changes) {
    if (++count % RECORDS_PER_TURN === 0) await nextTurn();
    if (change.kind !== 'steps') records.push(change);
    else {
      const key = `${change.projectId}.${change.record.id}`;
      const list = steps.get(key);
      if (list) list.changes.push(...change.record.changes);
      else steps.set(key, { projectId: change.projectId, id: change.record.id, changes: [...change.record.changes] });
    }
  }
  const applied: RestoredChange[] = [];
  for (const change of records) {
    if (++count % RECORDS_PER_TURN === 0) await nextTurn();
    const list = change.kind === 'delivery' ? steps.get(`${change.projectId}.${change.record.id}`) : undefined;
    if (!list || change.kind !== 'delivery') {
      applied.push(change);
      continue;
    }
    steps.delete(`${change.projectId}.${change.record.id}`);
    list.changes.sort((a, b) => a.transitionIndex - b.transitionIndex);
    let next = change.record.transitions.length;
    const contiguous: DeliveryChange[] = [];
    for (const [index, step] of list.changes.entries()) {
      if (step.transitionIndex < next) continue;
      if (step.transitionIndex > next) {
        unapplied?.(change.projectId, { id: list.id, changes: list.changes.slice(index) });
        break;
      }
      contiguous.push(step);
      next += step.transitions.length;
    }
    applied.push({ ...change, record: withChanges(change.record, contiguous) });
  }
  if (unapplied) for (const list of steps.values()) unapplied(list.projectId, { id: list.id, changes: list.changes.sort((a, b) => a.transitionIndex - b.transitionIndex) });
  return applied;
}

/**
 * A snapshot's records: each delivery with the steps that follow on from it applied (steps that
 * do not are kept as they were), less the deliveries `expired` names and their steps.
 */
async function snapshotOf(changes: Iterable<ChangelogRecord>, expired: (record: DeliveryRecord) => boolean): Promise<{ kept: ChangelogRecord[]; leftOut: number }> {
  const unapplied: ChangelogRecord[] = [];
  const records: ChangelogRecord[] = await withSteps(changes, (projectId, steps) => unapplied.push({ kind: 'steps', projectId, record: steps }));
  const gone = new Set<string>();
  for (const change of records) if (change.kind === 'delivery' && expired(change.record)) gone.add(`${change.projectId}.${change.record.id}`);
  const all = records.concat(unapplied);
  const kept = gone.size === 0 ? all : all.filter((change) => (change.kind !== 'delivery' && change.kind !== 'steps') || !gone.has(`${change.projectId}.${change.record.id}`));
  return { kept, leftOut: all.length - kept.length };
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
