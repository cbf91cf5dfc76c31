import { statfsSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { DeliveryStatus } from '../machines/index.js';
import { commitFailureCause, installCommitFailureGuard, observed } from './lmdb-commit-failures.js';
import type { DeliveryChange, DeliveryRecord, EventRecord, ProjectRecord, RejectedEventRecord, WebhookRecord } from './records.js';

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
  event(projectId: string, record: EventRecord): Promise<void>;
  webhook(projectId: string, record: WebhookRecord): Promise<void>;
}

/** A record arriving from another node's changelog, stored as it is and not replicated again. */
export type RestoredRecord =
  | { kind: 'delivery'; record: DeliveryRecord }
  | { kind: 'event'; record: EventRecord }
  | { kind: 'webhook'; record: WebhookRecord };

/** How often the used size is re-read from LMDB's stats: often enough for a quota, cheap on ingest. */
const QUOTA_CHECK_INTERVAL_MS = 250;

/** Free space kept on the data directory's filesystem: ingest stops there (the smaller of the two). */
const DISK_RESERVE_MAX_BYTES = 128 * 1024 * 1024;
const DISK_RESERVE_FRACTION = 0.05;
/**
 * How long a commit's flush may take before durability is confirmed by an explicit sync instead:
 * lmdb-js never settles the flush promise of a batch whose write failed, so after a failed commit
 * an acknowledged write (or a close) would otherwise wait forever.
 */
const FLUSH_CONFIRM_MS = 1000;

/**
 * LMDB persistence. Writes are asynchronous and lmdb-js commits every write issued in one event-loop
 * turn in one transaction, so concurrent ingests share a commit (and its fsync) instead of paying one
 * each. `writeIngest` resolves once the commit is flushed to disk: only then is an event acknowledged.
 *
 * Reads outside a transaction see committed data only, so read-modify-write of a delivery happens
 * inside `transaction()`, where the changes queued before it are visible and applied in order.
 */
export class HooklineStore {
  readonly root: RootDatabase;
  readonly projects: Database<ProjectRecord, string>;
  readonly apiKeys: Database<string, string>;
  readonly webhooks: Database<WebhookRecord, string>;
  readonly events: Database<EventRecord, ProjectKey>;
  readonly deliveries: Database<DeliveryRecord, ProjectKey>;
  readonly deliveriesByStatus: Database<true, StatusKey>;
  readonly rejectedEvents: Database<RejectedEventRecord, ProjectKey>;

  /** Set by a cluster node; null on a single node. */
  replicator: StoreReplicator | null = null;
  private readonly path: string;
  private readonly maxDataBytes: number;
  private quotaCheckedAt = 0;
  private overQuota = false;
  private overLimit = false;
  private diskTight = false;
  private diskFull = false;

  constructor(options: StoreOptions) {
    installCommitFailureGuard();
    this.path = options.path;
    this.maxDataBytes = options.maxDataBytes ?? 0;
    this.root = open({ path: options.path, ...(options.mapSize ? { mapSize: options.mapSize } : {}) });
    this.projects = this.root.openDB({ name: 'projects' });
    this.apiKeys = this.root.openDB({ name: 'api-keys' });
    this.webhooks = this.root.openDB({ name: 'webhooks' });
    this.events = this.root.openDB({ name: 'events' });
    this.deliveries = this.root.openDB({ name: 'deliveries' });
    this.deliveriesByStatus = this.root.openDB({ name: 'deliveries-by-status' });
    this.rejectedEvents = this.root.openDB({ name: 'rejected-events' });
  }

  /**
   * True when the used pages of the environment exceed `maxDataBytes`, or when the filesystem of the
   * data directory is down to its reserve (re-read every 250 ms). The reserve keeps LMDB from ever
   * meeting a full disk on an ingest: lmdb-js can corrupt its own memory on a write that fails with
   * ENOSPC, and the deliveries already stored need room for their state changes.
   */
  isOverQuota(): boolean {
    const now = performance.now();
    if (now - this.quotaCheckedAt >= QUOTA_CHECK_INTERVAL_MS) {
      this.quotaCheckedAt = now;
      const stats = this.root.getStats() as { lastPageNumber: number; pageSize: number };
      this.overLimit = this.maxDataBytes > 0 && stats.lastPageNumber * stats.pageSize >= this.maxDataBytes;
      this.overQuota = this.overLimit || this.diskAtReserve();
    } else if (this.diskTight) {
      // Close to the reserve, 250 ms of ingest could overshoot it: read the free space every time.
      this.overQuota = this.overLimit || this.diskAtReserve();
    }
    return this.overQuota;
  }

  private diskAtReserve(): boolean {
    try {
      const { bavail, bsize, blocks } = statfsSync(this.path);
      const reserve = Math.min(DISK_RESERVE_MAX_BYTES, blocks * bsize * DISK_RESERVE_FRACTION);
      this.diskTight = bavail * bsize < 4 * reserve;
      this.diskFull = bavail * bsize < reserve;
    } catch {
      // No reading (a filesystem without statfs, a transient error): the last one stands.
    }
    return this.diskFull;
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

  getDelivery(projectId: string, deliveryId: string): DeliveryRecord | undefined {
    return this.deliveries.get([projectId, deliveryId]);
  }

  /**
   * Stores an accepted event and, when it matched, its first delivery: one atomic commit. A commit
   * that failed for want of space rejects with an error whose `code` is `ENOSPC`.
   */
  async writeIngest(projectId: string, event: EventRecord, delivery: DeliveryRecord | null): Promise<void> {
    try {
      await this.root.transaction(() => {
        this.events.put([projectId, event.id], event);
        if (delivery) this.putNewDelivery(projectId, delivery);
      });
      // With overlappingSync a commit is visible before it is on disk; an acknowledged event must be on disk.
      await this.durable();
    } catch (error) {
      throw await commitFailureCause(error, this.path);
    }
    if (this.replicator) {
      try {
        await Promise.all([this.replicator.event(projectId, event), delivery ? this.replicator.delivery(projectId, delivery) : null]);
      } catch (error) {
        // Not replicated, so not accepted: take it back, or the sender's retry would be answered as a
        // repeat of an event that the next owner of the partition would never know about.
        await observed(this.root.transaction(() => {
          this.events.remove([projectId, event.id]);
          if (delivery) {
            this.deliveries.remove([projectId, delivery.id]);
            this.deliveriesByStatus.remove([projectId, delivery.status, delivery.id]);
          }
        })).catch(() => {});
        throw error;
      }
    }
  }

  /** Resolves once every commit so far is on disk: the flush, or failing that in time, an explicit sync. */
  private async durable(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, FLUSH_CONFIRM_MS, false)));
    try {
      if (await Promise.race([Promise.resolve(this.root.flushed).then(() => true), late])) return;
    } finally {
      clearTimeout(timer);
    }
    const root = this.root as unknown as { sync(callback: (error?: Error | null) => void): void };
    await new Promise<void>((resolve, reject) => root.sync((error) => (error ? reject(error) : resolve())));
  }

  /** Stores a replay: a new delivery of a stored event, linked from the event. */
  async writeReplay(projectId: string, eventId: string, delivery: DeliveryRecord): Promise<void> {
    const event = await observed(this.root.transaction(() => {
      const event = this.events.get([projectId, eventId]);
      if (!event) throw new Error(`event ${eventId} vanished before its replay was stored`);
      event.deliveryIds.push(delivery.id);
      this.events.put([projectId, eventId], event);
      this.putNewDelivery(projectId, delivery);
      return event;
    }));
    if (this.replicator) await Promise.all([this.replicator.event(projectId, event), this.replicator.delivery(projectId, delivery)]);
  }

  /**
   * Stores a record from the changelog over whatever this node had (cluster takeover), unless this
   * node's copy is newer: a node that owned the partition before may hold a later version whose
   * append never reached the changelog, and a restore must never move a record back in time. A
   * delivery's transitions and an event's delivery ids only ever grow; a webhook carries `updatedAt`.
   */
  async restoreRecord(projectId: string, restored: RestoredRecord): Promise<void> {
    await observed(this.root.transaction(() => {
      if (restored.kind === 'webhook') {
        const previous = this.webhooks.get(projectId);
        if (previous && previous.updatedAt > restored.record.updatedAt) return;
        this.webhooks.put(projectId, restored.record);
      } else if (restored.kind === 'event') {
        const previous = this.events.get([projectId, restored.record.id]);
        if (previous && previous.deliveryIds.length > restored.record.deliveryIds.length) return;
        this.events.put([projectId, restored.record.id], restored.record);
      } else {
        const previous = this.deliveries.get([projectId, restored.record.id]);
        if (previous && previous.transitions.length > restored.record.transitions.length) return;
        if (previous) this.deliveriesByStatus.remove([projectId, previous.status, previous.id]);
        this.putNewDelivery(projectId, restored.record);
      }
    }));
  }

  private putNewDelivery(projectId: string, delivery: DeliveryRecord): void {
    this.deliveries.put([projectId, delivery.id], delivery);
    this.deliveriesByStatus.put([projectId, delivery.status, delivery.id], true);
  }

  /**
   * Applies one machine step (and the attempt it recorded, if any) to the stored delivery. Resolves
   * with the record as this step left it (later steps may already be queued behind it).
   */
  async applyDeliveryChange(projectId: string, deliveryId: string, change: DeliveryChange): Promise<DeliveryRecord | undefined> {
    const record = await this.applyDeliveryChangeLocally(projectId, deliveryId, change);
    if (record && this.replicator) await this.replicator.delivery(projectId, record);
    return record;
  }

  private applyDeliveryChangeLocally(projectId: string, deliveryId: string, change: DeliveryChange): Promise<DeliveryRecord | undefined> {
    return observed(this.root.transaction(() => {
      const key: ProjectKey = [projectId, deliveryId];
      const record = this.deliveries.get(key);
      if (!record) return undefined;
      if (record.status !== change.status) {
        this.deliveriesByStatus.remove([projectId, record.status, deliveryId]);
        this.deliveriesByStatus.put([projectId, change.status, deliveryId], true);
      }
      record.status = change.status;
      record.attempts = change.attempts;
      record.roundAttempts = change.roundAttempts;
      record.roundSize = change.roundSize;
      record.nextAttemptAt = change.nextAttemptAt;
      record.updatedAt = change.updatedAt;
      record.transitions.push(...change.transitions);
      if (change.attempt) record.attemptLog.push(change.attempt);
      this.deliveries.put(key, record);
      return record;
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
    if (projectId === null) return this.listAllRejectedEvents(limit, beforeId);
    const range = this.rejectedEvents.getRange({ start: [projectId, beforeId ?? '\uffff'], end: [projectId, ''], reverse: true });
    const page: RejectedEventRecord[] = [];
    for (const { value } of range) {
      if (beforeId !== undefined && value.id >= beforeId) continue;
      page.push(value);
      if (page.length === limit) break;
    }
    return page;
  }

  /**
   * Every project's rejected events, newest first. Keys sort by project before id, so a key-order
   * scan is not time order (and a cursor over it would skip other projects' records): keep the
   * `limit` newest ids below the cursor over one pass instead (an admin diagnostic, not a hot path).
   */
  private listAllRejectedEvents(limit: number, beforeId?: string): RejectedEventRecord[] {
    let newest: RejectedEventRecord[] = [];
    const byIdDescending = (a: RejectedEventRecord, b: RejectedEventRecord) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
    for (const { value } of this.rejectedEvents.getRange()) {
      if (beforeId !== undefined && value.id >= beforeId) continue;
      newest.push(value);
      if (newest.length >= 2 * limit) newest = newest.sort(byIdDescending).slice(0, limit);
    }
    return newest.sort(byIdDescending).slice(0, limit);
  }

  /** How many deliveries of every project are in `status` (a metrics reading, not a hot path). */
  countByStatus(status: DeliveryStatus): number {
    let total = 0;
    for (const projectId of this.projects.getKeys()) {
      total += this.deliveriesByStatus.getCount({ start: [projectId, status, ''], end: [projectId, status, '\uffff'] });
    }
    return total;
  }

  /** Deletes terminal deliveries created before `cutoffId`; returns how many went. */
  async pruneTerminal(projectId: string, cutoffId: string, maxCount: number): Promise<number> {
    const doomed: string[] = [];
    for (const status of ['succeeded', 'dead_lettered'] as const) {
      for (const key of this.deliveriesByStatus.getKeys({ start: [projectId, status, ''], end: [projectId, status, cutoffId], limit: maxCount - doomed.length })) {
        doomed.push(key[2]);
        if (doomed.length >= maxCount) break;
      }
    }
    if (doomed.length === 0) return 0;
    await observed(this.root.transaction(() => {
      for (const id of doomed) {
        const record = this.deliveries.get([projectId, id]);
        if (!record) continue;
        this.deliveriesByStatus.remove([projectId, record.status, id]);
        this.deliveries.remove([projectId, id]);
      }
    }));
    return doomed.length;
  }

  /** Resolves once every write issued so far is committed and flushed. */
  async flush(): Promise<void> {
    await this.root.flushed;
  }

  async close(): Promise<void> {
    // Bounded: after a failed commit (a full disk) lmdb-js never settles `flushed`.
    await this.durable().catch(() => {});
    await this.root.close();
  }
}
