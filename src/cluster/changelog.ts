import { setImmediate as nextTurn } from 'node:timers/promises';
import { RetentionPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureStream, reachJetStream, type SetupLog } from '../transport/nats-streams.js';
import { pack } from 'msgpackr';
import { DEFAULT_CHANGELOG_SNAPSHOT_EVERY } from '../config/settings.js';
import type { DeliverySteps } from '../store/changelog-restore.js';
import { BatchAppender, anonymousWriter, newPartitionLog, type ChangelogWriter, type PartitionLog } from './changelog-append.js';
import { recordKey, type ChangelogRecord, type RestoredChange } from './changelog-entries.js';
import { withSteps, withoutTakenBack } from './changelog-merge.js';
import { ChangelogReader, LOG_TOKEN, MARKER_TOKEN, SNAPSHOT_TOKEN, type PartitionRead, type SnapshotMarker } from './changelog-read.js';
import { publishSnapshot } from './changelog-snapshot.js';

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
 * appended, is refused instead of putting older versions after newer ones. A holder's restore ends
 * with a batch of its own (`fence`), so that the previous owner's batches are refused from then on
 * even before the new owner's first append.
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

export type { ChangelogRecord, ChangelogWriter, DeliverySteps, RestoredChange };

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
  /** Messages purged: what the previous snapshot replaced. */
  purged: number;
}


/**
 * Chunks a restore into LMDB has handed on and not seen committed: bounded, so that a slow disk
 * holds back the read rather than let the partition pile up in memory.
 */
const CHUNKS_APPLYING = 4;

/** How a restore is made: `fence` by the node that holds the partition's lease and appends to it next. */
export interface RestoreOptions {
  fence?: boolean;
}


export class PartitionChangelog {
  private readonly js: JetStreamClient;
  private manager: JetStreamManager | null = null;
  private readonly logs = new Map<number, PartitionLog>();
  private readonly reader: ChangelogReader;
  private readonly appender: BatchAppender;

  constructor(
    private readonly connection: NatsConnection,
    readonly stream: string,
    readonly subjectPrefix: string,
    /** Entries a partition's batches hold after its snapshot before the next is due, at the least (`HOOKLINE_CHANGELOG_SNAPSHOT_EVERY`). */
    private readonly snapshotEvery = DEFAULT_CHANGELOG_SNAPSHOT_EVERY,
    writer: ChangelogWriter = anonymousWriter(),
  ) {
    this.js = jetstream(connection);
    this.reader = new ChangelogReader(this.js, () => this.jsm(), stream, subjectPrefix, () => this.appender.maxPayload());
    this.appender = new BatchAppender(connection, this.js, this.reader, writer);
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
      log = newPartitionLog(partition, this.reader.subjectOf(partition, LOG_TOKEN));
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
    return this.appender.appendTogether(this.logOf(partition), changes, stillHeld);
  }

  /**
   * Every record of the partition, latest version each, handed to `apply`; resolves with their
   * count once every `apply` has. The applies run together, so the store commits them in a few
   * transactions rather than one each.
   */
  async restore(partition: number, apply: (change: RestoredChange) => Promise<void> | void, options: RestoreOptions = {}): Promise<number> {
    this.forget(partition);
    const state = await this.read(partition, options);
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
  async restoreInto(partition: number, apply: (entries: ChangelogRecord[]) => Promise<void>, options: RestoreOptions = {}): Promise<number> {
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
    const visit = (change: ChangelogRecord): void => {
      chunk.push(change);
      count++;
    };
    const state = await this.reader.walk(partition, visit, handOn);
    if (options.fence) await this.appender.fence(partition, state, visit, handOn);
    await handOn();
    for (const applied of applying) await applied;
    this.restored(partition, state);
    return count;
  }

  /** Where the partition's subject stands once restored here: the next batch and snapshot are conditional on it. */
  private restored(partition: number, state: PartitionRead): void {
    const log = this.logOf(partition);
    log.released = false;
    log.lastSequence = state.lastBatch;
    log.foreignFrom = undefined;
    log.markerSequence = state.marker?.sequence ?? 0;
    log.entriesSinceSnapshot = state.entriesAfterSnapshot;
    log.snapshotEntries = state.snapshotEntries;
  }

  /**
   * The partition's records from its last snapshot and the batches after it.
   */
  private async read(partition: number, options: RestoreOptions): Promise<PartitionState> {
    const latest = new Map<string, ChangelogRecord>();
    const visit = (change: ChangelogRecord): void => void latest.set(recordKey(change), change);
    const state = await this.reader.walk(partition, visit, nextTurn);
    if (options.fence) await this.appender.fence(partition, state, visit, nextTurn);
    return { ...state, latest };
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
   * Writes a snapshot of the partition as of its last batch this node stored, from `records`: every
   * record's latest version as this node's LMDB holds it (a delivery whole, with its steps), less
   * the deliveries past retention, read in bounded chunks (`readPartitionRecords`) and published
   * as they come, so that the partition is never held in memory. LMDB holds every version a batch
   * up to the last one carried (a change is appended after its commit), or a later one, which
   * the batches after the snapshot also carry (or will): read over the snapshot, a batch's older
   * version of a record is followed by the steps appended after it, and a takeover's restore keeps
   * the longer version anyway (`putRestoredRecord`). It covers no batch from `foreignFrom` on
   * (another writer's, whose records LMDB may lack). Only while `stillHeld` (checked before each message); its marker is conditional on the
   * last marker this node saw (at its restore or its previous snapshot), so a node that lost the
   * partition never names a snapshot over the owner's. Then purges what the previous snapshot
   * replaced. Null when the partition is not restored here, a compaction of it runs, or the lease
   * went meanwhile (a snapshot left unmarked is never read, and is purged with the next one).
   */
  async compact(partition: number, records: AsyncIterable<readonly ChangelogRecord[]>, stillHeld: () => boolean): Promise<Compaction | null> {
    const log = this.logs.get(partition);
    if (!log || log.lastSequence === undefined || log.compacting || !stillHeld()) return null;
    log.compacting = true;
    try {
      const covers = Math.min(log.lastSequence, (log.foreignFrom ?? Number.POSITIVE_INFINITY) - 1);
      // Every batch up to `covers` is stored: those stored from now on count toward the next snapshot.
      const foldedEntries = log.entriesSinceSnapshot;
      const previous = await this.reader.lastMarker(partition);
      // A marker this node has not seen: another node holds the partition now, or did meanwhile.
      if ((previous?.sequence ?? 0) !== log.markerSequence) return null;
      const written = await publishSnapshot(this.js, this.reader.subjectOf(partition, SNAPSHOT_TOKEN), this.appender.payloadLimit(), records, stillHeld);
      if (!written || !stillHeld()) return null;
      const marker: SnapshotMarker = { from: written.from, to: written.to, covers };
      log.markerSequence = (await this.js.publish(this.reader.subjectOf(partition, MARKER_TOKEN), pack(marker), { expect: { lastSubjectSequence: log.markerSequence } })).seq;
      log.entriesSinceSnapshot -= foldedEntries;
      log.snapshotEntries = written.records;
      let purged = 0;
      // Nothing lies below sequence 1, and the server takes a purge below 1 for a purge of everything.
      if (previous && previous.marker.covers > 0 && stillHeld()) {
        purged = (await (await this.jsm()).streams.purge(this.stream, { filter: `${this.subjectPrefix}.${partition}.>`, seq: previous.marker.covers + 1 })).purged;
      }
      return { covers, records: written.records, purged };
    } finally {
      log.compacting = false;
    }
  }

  /**
   * Drops what this node knew of a partition's subject (it no longer holds it, or restores it
   * anew), and refuses its appends until a restore here: what waited for a batch is not stored.
   */
  forget(partition: number): void {
    const log = this.logs.get(partition);
    if (!log) return;
    log.lastSequence = undefined;
    this.appender.release(log);
  }
}
