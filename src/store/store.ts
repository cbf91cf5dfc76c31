import { open, type Database, type RootDatabase } from 'lmdb';
import { countProjectKeys } from './key-revocation.js';
import { isTerminalDelivery } from '../machines/index.js';
import type { DeliveryStatus } from '../machines/index.js';
import { commitFailureCause, installCommitFailureGuard, observed } from './lmdb-commit-failures.js';
import type { DeliveryIdentity } from './delivery-model.js';
import { headOf } from './delivery-model.js';
import { ChangelogRestore, putRestoredRecord, type RestorePace, type RestoredRecord, type StashKey } from './changelog-restore.js';
import { DeliveryTables } from './delivery-tables.js';

export type { RestoredRecord } from './changelog-restore.js';
import type { DueKey } from './delivery-tables.js';
import { DiskQuota } from './disk-quota.js';
import { DurableWrites } from './durable-writes.js';
import { listRejectedEvents } from './rejected-events.js';
import { openTable } from './tables.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord, DeliverySchedule, EventRecord, ProjectRecord, RejectedEventRecord, WebhookRecord } from './records.js';

type ProjectKey = [projectId: string, id: string];
type StatusKey = [projectId: string, status: DeliveryStatus, deliveryId: string];

export interface StoreOptions {
  /** Directory of the LMDB environment; created if missing. */
  path: string;
  /**
   * Initial map size in bytes. lmdb-js grows the map as the data grows.
   * @default lmdb-js's default
   */
  mapSize?: number;
  /**
   * Size of the data above which `isOverQuota()` says so (ingest then refuses new events).
   * @default 0 (no limit)
   */
  maxDataBytes?: number;
}

/**
 * Where a cluster node sends every committed change, so that another node can take the project
 * over (the partition changelog) or authenticate its keys (the directory). Single nodes have none.
 * A write resolves only after its replication does: an acknowledged event is replicated too.
 */
export interface StoreReplicator {
  project(record: ProjectRecord, apiKeyHash: string | null): Promise<void>;
  delivery(projectId: string, record: DeliveryRecord): Promise<void>;
  /** Steps of a delivery whose record (`delivery`) went before: what a step adds, not the record re-read. */
  deliverySteps(projectId: string, deliveryId: string, changes: readonly DeliveryChange[]): Promise<void>;
  /** An event and, when one was made with it, its delivery: stored together or not at all. */
  event(projectId: string, record: EventRecord, delivery: DeliveryRecord | null): Promise<void>;
  webhook(projectId: string, record: WebhookRecord): Promise<void>;
}

/**
 * LMDB persistence. Writes are asynchronous and lmdb-js commits every write issued in one event-loop
 * turn in one transaction, so concurrent ingests share a commit (and its fsync) instead of paying one
 * each. `writeIngest` resolves once the commit is flushed to disk: only then is an event acknowledged.
 *
 * A delivery is a head (its state, `deliveries`) plus its transitions and attempts under keys of
 * their own (`delivery-transitions`, `delivery-attempts`, `[deliveryId, index]`). A step
 * appends its entries and puts the head whole, with the status index, in one commit: nothing is
 * read to write it. Reads assemble the record (`getDelivery`); a restart reads heads only.
 * Stores of the earlier model (whole records in `deliveries`) are converted once, at open.
 */
export class HooklineStore {
  readonly root: RootDatabase;
  readonly projects: Database<ProjectRecord, string>;
  readonly apiKeys: Database<string, string>;
  readonly webhooks: Database<WebhookRecord, string>;
  readonly events: Database<EventRecord, ProjectKey>;
  /** Delivery heads (`DeliveryTables.heads`). */
  readonly deliveries: Database<DeliveryHead, ProjectKey>;
  readonly deliveryTables: DeliveryTables;
  /** The status index (`DeliveryTables.byStatus`). */
  readonly deliveriesByStatus: Database<DeliverySchedule, StatusKey>;
  readonly rejectedEvents: Database<RejectedEventRecord, ProjectKey>;
  /** This node's own delivery copies a partition's restore replaced (`ChangelogRestore`). */
  readonly restoreStash: Database<DeliveryRecord, StashKey>;

  /** Set by a cluster node; null on a single node. */
  replicator: StoreReplicator | null = null;
  private readonly path: string;
  private readonly diskQuota: DiskQuota;
  private readonly durableWrites: DurableWrites;

  constructor(options: StoreOptions) {
    installCommitFailureGuard();
    this.path = options.path;
    // noSubdir: false always: lmdb-js guesses from a dot in the last path part (`hookline.d`, most
    // `mktemp -d` names) that the path is a file, and then cannot open the directory.
    // maxDbs: lmdb-js allows 12 named tables by default, all taken before `portal-links` (opening it
    // failed with MDB_DBS_FULL); the limit is per open, not stored, so raising it changes no file.
    this.root = open({ path: options.path, noSubdir: false, maxDbs: 32, ...(options.mapSize ? { mapSize: options.mapSize } : {}) });
    this.projects = openTable(this.root, 'projects');
    this.apiKeys = openTable(this.root, 'api-keys');
    this.webhooks = openTable(this.root, 'webhooks');
    this.events = openTable(this.root, 'events');
    this.deliveryTables = new DeliveryTables(this.root);
    this.deliveries = this.deliveryTables.heads;
    this.deliveriesByStatus = this.deliveryTables.byStatus;
    this.rejectedEvents = openTable(this.root, 'rejected-events');
    this.restoreStash = openTable(this.root, 'restore-stash');
    this.deliveryTables.convertWholeRecords();
    this.diskQuota = new DiskQuota(this.root, options.path, options.maxDataBytes ?? 0);
    this.durableWrites = new DurableWrites(this.root);
  }

  /**
   * True when the store's size exceeds `maxDataBytes` or the data directory's filesystem is down
   * to its reserve: ingest then refuses new events (`DiskQuota.isOverQuota`).
   */
  isOverQuota(): boolean {
    return this.diskQuota.isOverQuota();
  }

  // Projects and keys -------------------------------------------------------------------------

  getProject(projectId: string): ProjectRecord | undefined {
    return this.projects.get(projectId);
  }

  allProjects(): ProjectRecord[] {
    return [...this.projects.getRange().map(({ value }) => value)];
  }

  /** Creates the project and its key hash in one commit. */
  async createProject(project: ProjectRecord, apiKeyHash: string): Promise<void> {
    await observed(this.root.transaction(() => {
      this.projects.put(project.id, project);
      this.apiKeys.put(apiKeyHash, project.id);
    }));
    await this.replicator?.project(project, apiKeyHash);
  }

  async addApiKey(apiKeyHash: string, projectId: string): Promise<void> {
    await observed(this.apiKeys.put(apiKeyHash, projectId));
    const project = this.getProject(projectId);
    if (project) await this.replicator?.project(project, apiKeyHash);
  }

  /** Mirrors a project or key another node created (from the cluster directory); not replicated again. */
  async mirrorDirectory(project: ProjectRecord | null, apiKeyHash: string | null, projectId: string): Promise<void> {
    await observed(this.root.transaction(() => {
      if (project && !this.projects.get(project.id)) this.projects.put(project.id, project);
      if (apiKeyHash) this.apiKeys.put(apiKeyHash, projectId);
    }));
  }

  /** Drops a key revoked in the cluster directory from the mirror; false when it was not here. */
  async forgetApiKey(apiKeyHash: string): Promise<boolean> {
    return observed(this.apiKeys.remove(apiKeyHash));
  }

  /** How many API keys open the project (a scan of every key: for start-up and tools, not requests). */
  apiKeyCount(projectId: string): number {
    return countProjectKeys(this.apiKeys, projectId);
  }

  projectIdForKeyHash(apiKeyHash: string): string | undefined {
    return this.apiKeys.get(apiKeyHash);
  }

  // Webhook configuration ---------------------------------------------------------------------

  getWebhook(projectId: string): WebhookRecord | undefined {
    return this.webhooks.get(projectId);
  }

  async putWebhook(projectId: string, webhook: WebhookRecord): Promise<void> {
    await observed(this.webhooks.put(projectId, webhook));
    await this.replicator?.webhook(projectId, webhook);
  }

  // Events and deliveries ---------------------------------------------------------------------

  getEvent(projectId: string, eventId: string): EventRecord | undefined {
    return this.events.get([projectId, eventId]);
  }

  /** The delivery with its attempt log and transitions, assembled from its head and log entries. */
  getDelivery(projectId: string, deliveryId: string): DeliveryRecord | undefined {
    return this.deliveryTables.get(projectId, deliveryId);
  }

  /** The delivery's state without its history: what a restart or a recovery operation needs. */
  getDeliveryHead(projectId: string, deliveryId: string): DeliveryHead | undefined {
    return this.deliveries.get([projectId, deliveryId]);
  }

  assemble(projectId: string, head: DeliveryHead): DeliveryRecord {
    return this.deliveryTables.assemble(projectId, head);
  }

  /**
   * Stores an accepted event and, when it matched, its first delivery: one atomic commit. A commit
   * that failed for want of space rejects with an error whose `code` is `ENOSPC`.
   */
  async writeIngest(projectId: string, event: EventRecord, delivery: DeliveryRecord | null): Promise<void> {
    const diskBytes = this.diskQuota.ingestBegun(event.envelope.byteLength);
    try {
      await this.durableWrites.write(() => {
        this.events.put([projectId, event.id], event);
        if (delivery) this.deliveryTables.putWholeRecord(projectId, delivery);
      });
    } catch (error) {
      throw await commitFailureCause(error, this.path);
    } finally {
      this.diskQuota.ingestEnded(diskBytes);
    }
    if (this.replicator) await this.replicateIngest(this.replicator, projectId, event, delivery);
  }

  private async replicateIngest(replicator: StoreReplicator, projectId: string, event: EventRecord, delivery: DeliveryRecord | null): Promise<void> {
    try {
      await replicator.event(projectId, event, delivery);
    } catch (error) {
      // Not replicated, so not accepted: take it back, or the sender's retry would be answered as a
      // repeat of an event that the next owner of the partition would never know about.
      await observed(this.root.transaction(() => {
        this.events.remove([projectId, event.id]);
        if (delivery) this.deliveryTables.remove(projectId, headOf(delivery));
      })).catch(() => {});
      throw error;
    }
  }

  /**
   * Runs `ingestAll` (a batch ingest), whose ingests (`writeIngest` calls made before it returns)
   * are issued in one LMDB batch and share one commit wait, flush and timer: a batch of 100 events
   * paid each of those 100 times, and its 100 own batches were 100 more instructions for LMDB's
   * write thread.
   */
  ingestTogether<T>(ingestAll: () => T): T {
    return this.durableWrites.inOneBatch(ingestAll);
  }

  /** Stores a replay: a new delivery of a stored event, linked from the event. */
  async writeReplay(projectId: string, eventId: string, delivery: DeliveryRecord): Promise<void> {
    const event = await observed(this.root.transaction(() => {
      const event = this.events.get([projectId, eventId]);
      if (!event) throw new Error(`event ${eventId} vanished before its replay was stored`);
      event.deliveryIds.push(delivery.id);
      this.events.put([projectId, eventId], event);
      this.deliveryTables.putWholeRecord(projectId, delivery);
      return event;
    }));
    await this.replicator?.event(projectId, event, delivery);
  }

  /** Stores a record from the changelog over whatever this node had, unless this node's copy is newer (`putRestoredRecord`). */
  async restoreRecord(projectId: string, restored: RestoredRecord): Promise<void> {
    await observed(this.root.transaction(() => void putRestoredRecord(this, projectId, restored)));
  }

  /**
   * Lays a partition's changelog into this store as it is read (a cluster takeover); `finish` once
   * it is all applied. Paced by `pace`, it shares the node with serving, in transactions of
   * `sliceMs` each.
   */
  restoring(partition: number, pace?: RestorePace, sliceMs?: number): ChangelogRestore {
    return new ChangelogRestore(this, partition, pace, sliceMs);
  }

  /**
   * Stores machine steps of one delivery, in order, in one commit: each step's transitions and
   * attempt under their log indexes, the head as the last step left it, and the status index moved
   * from `storedStatus` (the status LMDB holds before them). Nothing is read: steps written again
   * after a commit that was never confirmed land on the same keys, so none is logged twice; `again`
   * says that they are such steps, whose earlier commit may have left the index at any of their statuses.
   * `storedDueAt` is the due time LMDB holds for a stored `retrying` one (its due index entry moves).
   * A failed or unconfirmed commit rejects (with the cause, `code` `ENOSPC` when the disk is full),
   * and the caller writes the same steps again. Not replicated: the caller replicates with
   * `replicateDelivery` once the commit is done, so a replication failure is never taken for a
   * commit to redo.
   */
  async applyDeliveryChanges(projectId: string, identity: DeliveryIdentity, storedStatus: DeliveryStatus, changes: readonly DeliveryChange[], again = false, storedDueAt: number | null = null): Promise<void> {
    if (changes.length === 0) return;
    const commit = observed(this.root.batch(() => this.deliveryTables.putSteps(projectId, identity, storedStatus, changes, again, storedDueAt)));
    try {
      // Unsettled after 2 s counts as failed: lmdb-js settles no write of a batch whose commit erred.
      await this.durableWrites.confirmedDeliveryCommit(commit);
    } catch (error) {
      throw await commitFailureCause(error, this.path);
    }
  }

  /** Sends a committed delivery record to the replicator (cluster); a no-op on a single node. */
  async replicateDelivery(projectId: string, record: DeliveryRecord): Promise<void> {
    await this.replicator?.delivery(projectId, record);
  }

  /** Sends a delivery's steps to the replicator (cluster); a no-op on a single node. */
  async replicateSteps(projectId: string, deliveryId: string, changes: readonly DeliveryChange[]): Promise<void> {
    await this.replicator?.deliverySteps(projectId, deliveryId, changes);
  }

  /** Removes due index entries a window refill found stale (their deliveries moved on); nobody waits for it. */
  async removeStaleDue(stale: readonly DueKey[]): Promise<void> {
    if (stale.length === 0) return;
    await observed(this.root.batch(() => {
      for (const key of stale) this.deliveryTables.due.remove(key);
    }));
  }

  /** Delivery ids of one project in one status, newest first, optionally within [fromId, toId). */
  *deliveryIdsByStatus(projectId: string, status: DeliveryStatus, bounds: { fromId?: string; toId?: string } = {}): Generator<string> {
    const range = this.deliveriesByStatus.getKeys({
      start: [projectId, status, bounds.toId ?? '\uffff'],
      end: [projectId, status, bounds.fromId ?? ''],
      reverse: true,
    });
    for (const key of range) {
      const id = key[2];
      if (bounds.toId !== undefined && id >= bounds.toId) continue;
      yield id;
    }
  }

  // Rejected inbound events ------------------------------------------------------------------

  async putRejectedEvent(record: RejectedEventRecord): Promise<void> {
    await observed(this.rejectedEvents.put([record.projectId, record.id], record));
  }

  /** Rejected events of one project (or of all, when projectId is null), newest first, before `beforeId`. */
  listRejectedEvents(projectId: string | null, limit: number, beforeId?: string): RejectedEventRecord[] {
    return listRejectedEvents(this.rejectedEvents, projectId, limit, beforeId);
  }

  /** How many deliveries of every project `counted` accepts are in `status` (a metrics reading, not a hot path). */
  countByStatus(status: DeliveryStatus, counted: (projectId: string) => boolean = () => true): number {
    let total = 0;
    for (const projectId of this.projects.getKeys()) {
      if (!counted(projectId)) continue;
      total += this.deliveriesByStatus.getCount({ start: [projectId, status, ''], end: [projectId, status, '\uffff'] });
    }
    return total;
  }

  /** Ids of the project's terminal deliveries created before `cutoffId` (past retention), at most `maxCount`. */
  terminalIdsBefore(projectId: string, cutoffId: string, maxCount: number): string[] {
    const ids: string[] = [];
    for (const status of ['succeeded', 'dead_lettered'] as const) {
      for (const key of this.deliveriesByStatus.getKeys({ start: [projectId, status, ''], end: [projectId, status, cutoffId], limit: maxCount - ids.length })) {
        ids.push(key[2]);
        if (ids.length >= maxCount) return ids;
      }
    }
    return ids;
  }

  /**
   * Deletes the deliveries `ids` names that are still terminal and created before `cutoffId` when
   * the deletion runs, in a later commit than the read that found them: a retry or redrive may have
   * moved one back to `pending` meanwhile. Returns how many went.
   */
  async pruneTerminal(projectId: string, cutoffId: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return observed(this.root.transaction(() => {
      let pruned = 0;
      for (const id of ids) {
        const head = this.deliveries.get([projectId, id]);
        if (!head || !isTerminalDelivery(head.status) || id >= cutoffId) continue;
        this.deliveryTables.remove(projectId, head);
        pruned++;
      }
      return pruned;
    }));
  }

  /** Resolves once every write issued so far is committed and flushed. */
  async flush(): Promise<void> {
    await this.root.flushed;
  }

  async close(): Promise<void> {
    // Bounded: after a failed commit (a full disk) lmdb-js never settles `flushed`.
    await this.durableWrites.durable().catch(() => {});
    await this.root.close();
  }
}
