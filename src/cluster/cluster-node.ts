import { randomBytes } from 'node:crypto';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Engine } from '../actors/engine.js';
import type { Logger } from '../logger.js';
import type { Settings } from '../config/settings.js';
import { HooklineError } from '../errors.js';
import { partitionOf } from '../sdk/partition.js';
import type { DeliveryRecord, ProjectRecord } from '../store/records.js';
import { readPartitionRecords } from '../store/partition-records.js';
import type { StoreReplicator } from '../store/store.js';
import type { NatsTransport } from '../transport/nats.js';
import { maskedNatsUrl, natsAccess } from '../transport/nats-access.js';
import { natsSchemeWarnings } from '../transport/nats-seeds.js';
import { connectNats } from '../transport/nats-connection.js';
import { natsStartError } from '../transport/nats-start-error.js';
import { ensureKv, reachJetStream } from '../transport/nats-streams.js';
import type { EventSink } from '../transport/types.js';
import { PartitionChangelog, type ChangelogRecord } from './changelog.js';
import { ClusterCoordinator } from './coordinator.js';
import { directoryBucket } from './key-directory.js';
import { DirectoryMirror } from './directory-mirror.js';
import type { KV } from '@nats-io/kv';
import type { PartitionHost } from './coordinator.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { ForwardedReply, ForwardedRequest } from './rpc.js';
import { untilEveryPartitionOwned } from './ownership-gate.js';
import { openPartitionConsumer } from './partition-consumer.js';
import { PartitionRpc } from './rpc.js';
import { UnpartitionedEvents } from './unpartitioned-events.js';

export interface ClusterSettings {
  nodeId: string;
  partitions: number;
  leaseMs: number;
  /** The lease worker connection's reconnect limit (`LeaseKeeperOptions`). @default -1, reconnect forever */
  leaseReconnectAttempts?: number;
}

/** What `GET /healthz` shows of a cluster node. */
export interface ClusterStatus {
  nodeId: string;
  /** Partitions this node has restored and acts for, ascending. */
  partitions: number[];
  partitionCount: number;
}

/** How often a node looks for partitions whose changelog is due a snapshot. */
const SNAPSHOT_CHECK_MS = 5_000;

/** Records a snapshot reads from LMDB at a time: what it holds in memory, less what a message holds. */
const SNAPSHOT_CHUNK = 2_000;

/**
 * Longest a call for a partition without an owner waits for one before it answers 503
 * `partition_moving`: a graceful handover takes the old owner's drain, a rebalancing tick and a
 * restore (2-5 s seen on a loaded two-core machine), a failover the lease time more. Twice the
 * lease time, at least 10 s.
 */
export const handoverWaitMs = (leaseMs: number): number => Math.max(10_000, 2 * leaseMs);

/**
 * One node of a Hookline cluster: it joins the membership, owns the partitions the coordinator
 * gives it, restores each from the changelog before acting for it, consumes only those partitions'
 * ingest subjects, answers API calls forwarded to it, and replicates every change it makes.
 * Projects and API keys live in a KV bucket every node mirrors, so any node can authenticate.
 */
export class ClusterNode implements PartitionHost, StoreReplicator {
  /**
   * Marks API calls this node re-injects on behalf of another node (see `answerForwarded`); random
   * per process, so a client cannot pass a call off as already forwarded.
   */
  readonly forwardToken = randomBytes(16).toString('hex');
  private connection!: NatsConnection;
  /** One for the node's life: `jetstreamManager()` asks the server for its account info each time it is made. */
  private manager!: JetStreamManager;
  private mirror!: DirectoryMirror;
  private changelog!: PartitionChangelog;
  private rpc!: PartitionRpc;
  private leases!: LeaseKeeper;
  private coordinator!: ClusterCoordinator;
  /** Partitions restored and served here (their lease may still lapse: see `actsFor`). */
  private readonly serving = new Set<number>();
  private readonly consumers = new Map<number, NatsTransport>();
  /** Events published without their partition, passed on to it. */
  private unpartitioned: UnpartitionedEvents | null = null;
  private snapshotTimer: NodeJS.Timeout | null = null;
  /** The snapshots being written, one partition after another. */
  private snapshotting: Promise<void> | null = null;
  private stopping = false;

  /** The cluster directory (projects, keys, portal links), once `connect` has opened it. */
  get sharedDirectory(): KV {
    return this.mirror.directory;
  }
  private leaving: Promise<void> | null = null;
  /** Logged once: snapshots wait while a live node of an earlier version would not read them. */
  private snapshotsHeldBack = false;
  private engine!: Engine;
  private handleForwarded: ((request: ForwardedRequest) => Promise<ForwardedReply>) | null = null;

  constructor(
    private readonly settings: Settings,
    readonly cluster: ClusterSettings,
    private readonly logger: Logger,
    /**
     * Called once if a NATS connection of the node (its own, or its lease worker's) ends for good
     * while it runs (see `connectNats`).
     */
    private readonly onNatsClosed: (reason: HooklineError) => void = () => {},
  ) {}

  get nodeId(): string {
    return this.cluster.nodeId;
  }

  partitionOf(projectId: string): number {
    return partitionOf(projectId, this.cluster.partitions);
  }

  /** True while the partition is restored here and its lease is valid by the local clock. */
  private actsFor(partition: number): boolean {
    return this.serving.has(partition) && this.leases.isValid(partition);
  }

  ownsProject(projectId: string): boolean {
    return this.leases !== undefined && this.actsFor(this.partitionOf(projectId));
  }

  status(): ClusterStatus {
    const partitions = this.coordinator ? [...this.coordinator.ownedPartitions()].sort((a, b) => a - b) : [];
    return { nodeId: this.nodeId, partitions, partitionCount: this.cluster.partitions };
  }

  /** Connects and prepares the shared NATS state; the engine is attached afterwards. */
  async connect(): Promise<void> {
    let leases: Promise<LeaseKeeper> | undefined;
    try {
      // noAsyncTraces: otherwise every request (each changelog append, each pull) builds two errors
      // with a stack trace in case it fails, a tenth of a node's CPU in the profile of issue 12.
      const started = Date.now();
      const natsUrl = natsAccess(this.settings).natsUrl;
      for (const warning of natsSchemeWarnings(natsUrl, maskedNatsUrl)) this.logger.warn({ natsUrl: maskedNatsUrl(natsUrl) }, warning);
      this.connection = await connectNats(natsAccess(this.settings), { name: `hookline-${this.nodeId}`, noAsyncTraces: true, logger: this.logger, onClosed: this.onNatsClosed });
      this.logger.info({ nodeId: this.nodeId, server: this.connection.getServer(), ms: Date.now() - started }, 'cluster: connected to NATS');
      const replicas = this.settings.natsReplicas;
      const tickMs = Math.max(100, Math.floor(this.cluster.leaseMs / 4));
      // On a thread of its own, with its own connection: membership and leases. Started first, so
      // that its thread boots (about 0.2 s) while the streams below are set up.
      leases = LeaseKeeper.start({
        access: natsAccess(this.settings),
        // Every name derives from the events stream's, so clusters (and tests) sharing a NATS stay apart.
        bucket: `${this.settings.natsStream}_leases`,
        replicas,
        nodeId: this.nodeId,
        partitions: this.cluster.partitions,
        leaseMs: this.cluster.leaseMs,
        tickMs,
        ...(this.cluster.leaseReconnectAttempts !== undefined ? { maxReconnectAttempts: this.cluster.leaseReconnectAttempts } : {}),
        logger: this.logger,
        onConnectionClosed: this.onNatsClosed,
      });
      // Handled when awaited below; until then, a failure must not count as an unhandled rejection.
      leases.catch(() => {});
      this.manager = await reachJetStream(this.connection, this.logger);
      const directory = await ensureKv(this.connection, this.manager, directoryBucket(this.settings.natsStream), replicas, this.logger);
      this.mirror = new DirectoryMirror(directory, () => this.engine.store, this.logger);
      this.changelog = new PartitionChangelog(this.connection, `${this.settings.natsStream}_CHANGELOG`, `${this.settings.clusterSubjectPrefix}.changelog`, this.settings.changelogSnapshotEvery, {
        id: this.nodeId,
        holdsPartition: (partition) => this.leases.holdsInBucket(partition),
      });
      await this.changelog.ensureStream(replicas, this.logger);
      this.rpc = new PartitionRpc(this.connection, `${this.settings.clusterSubjectPrefix}.rpc`, (request) => this.handleForwarded!(request), this.cluster.nodeId, this.logger);
      this.leases = await leases;
      this.logger.info({ replicas, ms: Date.now() - started }, 'cluster: directory, leases and changelog ready');
      this.coordinator = new ClusterCoordinator({
        leases: this.leases,
        host: this,
        partitions: this.cluster.partitions,
        tickMs,
        releaseTimeoutMs: this.settings.deliveryTimeoutMs + 5_000,
        logger: this.logger,
      });
    } catch (error) {
      await leases?.then((keeper) => keeper.stop(), () => {});
      await this.connection?.close().catch(() => {});
      throw natsStartError(natsAccess(this.settings), error);
    }
  }

  /** Starts mirroring the directory and taking partitions; `handle` serves forwarded API calls. */
  async start(engine: Engine, handle: (request: ForwardedRequest) => Promise<ForwardedReply>): Promise<void> {
    this.engine = engine;
    this.handleForwarded = handle;
    try {
      await this.startSteps(engine);
    } catch (error) {
      // Each step retries what an election answers (`retrying`); one that still fails names what it waited for.
      throw natsStartError(natsAccess(this.settings), error);
    }
    this.snapshotTimer = setInterval(() => (this.snapshotting ??= this.snapshotDue().finally(() => (this.snapshotting = null))), SNAPSHOT_CHECK_MS);
    this.snapshotTimer.unref();
  }

  private async startSteps(engine: Engine): Promise<void> {
    const started = Date.now();
    const mirrored = await this.mirror.mirror();
    this.logger.info({ ms: Date.now() - started }, mirrored ? 'cluster: directory mirrored; taking partitions' : 'cluster: taking partitions; the directory is still being mirrored');
    await this.coordinator.start();
    this.unpartitioned = new UnpartitionedEvents({
      servers: this.settings.natsUrl!,
      connection: this.connection,
      manager: this.manager,
      replicas: this.settings.natsReplicas,
      stream: this.settings.natsStream,
      subjectPrefix: this.settings.natsSubjectPrefix,
      durable: this.settings.natsDurable,
      partitions: this.cluster.partitions,
      reject: (rejection) => engine.reject(rejection),
      logger: this.logger,
    });
    await this.unpartitioned.start();
  }

  /** Resolves true once every partition has an owner (`ownership-gate.ts`), false if the node stops first. */
  everyPartitionOwned(): Promise<boolean> {
    return untilEveryPartitionOwned({
      unowned: () => this.leases.unownedPartitions(this.cluster.partitions),
      partitions: this.cluster.partitions,
      intervalMs: Math.max(100, Math.floor(this.cluster.leaseMs / 8)),
      stopped: () => this.stopping,
      logger: this.logger,
    });
  }

  /**
   * Writes a snapshot of each partition served here whose changelog is due one, one at a time, so a
   * restore reads a bounded part of the partition's history. A snapshot stops when the lease goes
   * or the node stops; what it wrote then is never read, and is purged with the next one.
   */
  private async snapshotDue(): Promise<void> {
    const due = [...this.serving].filter((partition) => this.changelog.snapshotDue(partition)).sort((a, b) => a - b);
    if (due.length === 0) return;
    // A node of a version before snapshots, taking a partition over, would read only the batches
    // and miss what a snapshot folded (once purged): during a rolling upgrade, none is written.
    const everyNodeReadsThem = await this.leases.everyLiveNodeReadsSnapshots().catch(() => false);
    if (!everyNodeReadsThem) {
      if (!this.snapshotsHeldBack) this.logger.info({ partitions: due }, 'partition changelog snapshots held back: a live node of an earlier version does not read them');
      this.snapshotsHeldBack = true;
      return;
    }
    this.snapshotsHeldBack = false;
    for (const partition of due) {
      if (this.stopping || !this.changelog.snapshotDue(partition) || !this.actsFor(partition)) continue;
      const started = Date.now();
      try {
        // Logged: a snapshot of a partition of millions of records takes minutes.
        this.logger.info({ partition }, 'partition changelog snapshot started');
        const counts = { leftOut: 0 };
        const records = readPartitionRecords(this.engine.store, { owns: (projectId) => this.partitionOf(projectId) === partition, leaveOut: this.engine.pastRetention(), chunk: SNAPSHOT_CHUNK }, counts);
        const snapshot = await this.changelog.compact(partition, records, () => !this.stopping && this.leases.isValid(partition));
        if (snapshot) this.logger.info({ partition, ...snapshot, leftOut: counts.leftOut, ms: Date.now() - started }, 'partition changelog snapshot written');
        else if (this.stopping) this.logger.info({ partition, ms: Date.now() - started }, 'partition changelog snapshot abandoned: the node stops; the next owner restores from the batches after the last one');
      } catch (error) {
        this.logger.warn({ partition, err: error }, 'partition changelog snapshot failed; the changelog stays as it was, retrying later');
      }
    }
  }

  // Directory: projects and key hashes, shared by every node (directory-mirror.ts) ----------------

  authenticate(apiKey: string): Promise<string | null> {
    return this.mirror.authenticate(apiKey);
  }

  claimProject(record: ProjectRecord): Promise<boolean> {
    return this.mirror.claimProject(record);
  }

  project(record: ProjectRecord, apiKeyHash: string | null): Promise<void> {
    return this.mirror.project(record, apiKeyHash);
  }

  // Replication of partition state -------------------------------------------------------------

  /**
   * Fencing of the changelog: only a node whose lease is valid may append to a partition. A late
   * write (an attempt that outlived the drain of a partition handed over, or a node that lost its
   * lease) stays in this node's LMDB and never overwrites the new owner's records.
   */
  private partitionToAppend(projectId: string): number {
    const partition = this.partitionOf(projectId);
    if (!this.leases.isValid(partition)) {
      throw new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `partition ${partition} is no longer held by node ${this.nodeId}; the change was not replicated`, { retryAfterSeconds: 1 });
    }
    return partition;
  }

  async delivery(projectId: string, record: Parameters<StoreReplicator['delivery']>[1]): Promise<void> {
    const partition = this.partitionToAppend(projectId);
    await this.changelog.append(partition, { kind: 'delivery', projectId, record }, () => this.leases.isValid(partition));
  }

  async deliverySteps(projectId: string, deliveryId: string, changes: Parameters<StoreReplicator['deliverySteps']>[2]): Promise<void> {
    const partition = this.partitionToAppend(projectId);
    await this.changelog.append(partition, { kind: 'steps', projectId, record: { id: deliveryId, changes } }, () => this.leases.isValid(partition));
  }

  async event(projectId: string, record: Parameters<StoreReplicator['event']>[1], delivery: DeliveryRecord | null): Promise<void> {
    // One check and one message for both: checked apart, the lease could lapse between them, and
    // the event alone reach the changelog while its ingest was taken back and answered 503. The
    // sender's retry then met the restored event and was answered as a repeat, with no delivery.
    const partition = this.partitionToAppend(projectId);
    const changes: ChangelogRecord[] = [{ kind: 'event', projectId, record }];
    if (delivery) changes.push({ kind: 'delivery', projectId, record: delivery });
    await this.changelog.appendTogether(partition, changes, () => this.leases.isValid(partition));
  }

  async webhook(projectId: string, record: Parameters<StoreReplicator['webhook']>[1]): Promise<void> {
    const partition = this.partitionToAppend(projectId);
    await this.changelog.append(partition, { kind: 'webhook', projectId, record }, () => this.leases.isValid(partition));
  }

  // Partition ownership ------------------------------------------------------------------------

  async acquire(partition: number): Promise<void> {
    const started = Date.now();
    // Laid into LMDB as it is read, in slices between serving: the partition is never held in memory.
    const restoring = this.engine.restoring(partition);
    // Fenced: a previous owner's late batch is refused from here on, never stored unread.
    const restored = await this.changelog.restoreInto(partition, (entries) => restoring.apply(entries), { fence: true });
    const keptOwn = await restoring.finish();
    const owns = (projectId: string) => this.partitionOf(projectId) === partition;
    // Served from here on: until now the API forwarded the partition's calls (to no one: 503).
    this.serving.add(partition);
    this.logger.info({ partition, restored, keptOwn, ms: Date.now() - started }, 'partition restored from the changelog');
    this.engine.resumeProjects(owns);
    this.rpc.serve(partition);
    const consumer = await openPartitionConsumer({ settings: this.settings, connection: this.connection, manager: this.manager, partitions: this.cluster.partitions, logger: this.logger, tracing: this.engine.tracing }, partition);
    this.consumers.set(partition, consumer);
    await consumer.start(this.partitionSink(partition));
  }

  /**
   * The engine as one partition's consumer sees it: a message whose project belongs to another
   * partition (published with the wrong partition count) is rejected rather than nak'ed forever,
   * and a project created a moment ago on another node is looked up in the directory first.
   */
  private partitionSink(partition: number): EventSink {
    const engine = this.engine;
    return {
      ingest: async (projectId, input, traceparent) => {
        if (this.partitionOf(projectId) !== partition) {
          throw new HooklineError('HOOKLINE_ERR_VALIDATION', `project ${projectId} is in partition ${this.partitionOf(projectId)}, not ${partition}: publish with the cluster's partition count (HOOKLINE_PARTITIONS=${this.cluster.partitions})`, {
            details: [{ path: 'subject', message: `must be ${this.settings.natsSubjectPrefix}.${this.partitionOf(projectId)}.${projectId}` }],
          });
        }
        await this.mirror.mirrorProject(projectId);
        return engine.ingest(projectId, input, traceparent);
      },
      reject: (rejection) => engine.reject(rejection),
    };
  }

  async release(partition: number): Promise<void> {
    const owns = (projectId: string) => this.partitionOf(projectId) === partition;
    // At once: no more calls answered or attempts started for the partition.
    this.serving.delete(partition);
    this.rpc.unserve(partition);
    const drained = this.engine.releaseProjects(owns);
    // Messages already pulled are handed to the draining actors, which refuse them (nak: JetStream
    // redelivers them to the next owner); the rest stay in the stream for the next owner.
    const consumer = this.consumers.get(partition);
    this.consumers.delete(partition);
    await consumer?.stop();
    await drained;
    this.changelog.forget(partition);
  }

  async forward(projectId: string, request: ForwardedRequest): Promise<ForwardedReply> {
    return this.rpc.forward(this.partitionOf(projectId), request, this.settings.deliveryTimeoutMs + 5_000, handoverWaitMs(this.cluster.leaseMs));
  }

  /**
   * Hands every partition over and leaves the membership, keeping the NATS connection: calls the
   * node still answers (those in flight when it was told to stop) are forwarded to the new owners.
   * It starts no snapshot and abandons the one being written (its lease check fails before its
   * next message), so it waits a message's time, not the partition's: the snapshot of 804,001
   * records a SIGTERM once waited for took 156 s. A snapshot only shortens the next owner's
   * restore; every acknowledged change is in the changelog's batches already (an append resolves
   * once JetStream stored it, and a write is acknowledged only after its append), and the next
   * owner reads the last marked snapshot and every batch after it. The abandoned messages, never
   * marked, are never read, and the next snapshot's purge removes them.
   */
  leave(): Promise<void> {
    this.leaving ??= (async () => {
      this.stopping = true;
      if (this.snapshotTimer) clearInterval(this.snapshotTimer);
      await this.unpartitioned?.stop();
      await this.snapshotting;
      await this.coordinator?.stop();
      await this.leases?.stop();
    })();
    return this.leaving;
  }

  /** Leaves (when it has not yet), then closes the node's NATS connection. */
  async stop(): Promise<void> {
    await this.leave();
    this.mirror?.stop();
    this.rpc?.close();
    await this.connection?.drain().catch(() => this.connection?.close());
  }
}
