import { Kvm } from '@nats-io/kv';
import type { KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Engine } from '../actors/engine.js';
import type { Logger } from '../actors/project-actor.js';
import type { Settings } from '../config/settings.js';
import { HooklineError } from '../errors.js';
import { partitionOf } from '../sdk/partition.js';
import type { ProjectRecord } from '../store/records.js';
import type { StoreReplicator } from '../store/store.js';
import { NatsTransport } from '../transport/nats.js';
import type { EventSink } from '../transport/types.js';
import { PartitionChangelog } from './changelog.js';
import { ClusterCoordinator } from './coordinator.js';
import type { PartitionHost } from './coordinator.js';
import { PartitionLeases } from './leases.js';
import type { ForwardedReply, ForwardedRequest } from './rpc.js';
import { PartitionRpc } from './rpc.js';

export interface ClusterSettings {
  nodeId: string;
  partitions: number;
  leaseMs: number;
}


const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * One node of a Hookline cluster: it joins the membership, owns the partitions the coordinator
 * gives it, restores each from the changelog before acting for it, consumes only those partitions'
 * ingest subjects, answers API calls forwarded to it, and replicates every change it makes.
 * Projects and API keys live in a KV bucket every node mirrors, so any node can authenticate.
 */
export class ClusterNode implements PartitionHost, StoreReplicator {
  private connection!: NatsConnection;
  private directory!: KV;
  private changelog!: PartitionChangelog;
  private rpc!: PartitionRpc;
  private coordinator!: ClusterCoordinator;
  private readonly consumers = new Map<number, NatsTransport>();
  private directoryWatch: { stop(): void } | null = null;
  private engine!: Engine;
  private handleForwarded: ((request: ForwardedRequest) => Promise<ForwardedReply>) | null = null;

  constructor(
    private readonly settings: Settings,
    readonly cluster: ClusterSettings,
    private readonly logger: Logger,
  ) {}

  get nodeId(): string {
    return this.cluster.nodeId;
  }

  partitionOf(projectId: string): number {
    return partitionOf(projectId, this.cluster.partitions);
  }

  ownsProject(projectId: string): boolean {
    return this.coordinator?.ownsProject(projectId) ?? false;
  }

  /** Connects and prepares the shared NATS state; the engine is attached afterwards. */
  async connect(): Promise<void> {
    try {
      this.connection = await connect({ servers: this.settings.natsUrl!, name: `hookline-${this.nodeId}`, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      const kvm = new Kvm(this.connection);
      // Every name derives from the events stream's, so clusters (and tests) sharing a NATS stay apart.
      this.directory = await kvm.create(`${this.settings.natsStream}_directory`, { history: 1 });
      const clusterKv = await kvm.create(`${this.settings.natsStream}_leases`, { history: 1 });
      this.changelog = new PartitionChangelog(this.connection, `${this.settings.natsStream}_CHANGELOG`, `${this.settings.clusterSubjectPrefix}.changelog`);
      await this.changelog.ensureStream();
      this.rpc = new PartitionRpc(this.connection, `${this.settings.clusterSubjectPrefix}.rpc`, (request) => this.handleForwarded!(request));
      this.coordinator = new ClusterCoordinator({
        leases: new PartitionLeases(clusterKv, this.nodeId, this.cluster.leaseMs),
        host: this,
        partitions: this.cluster.partitions,
        tickMs: Math.max(100, Math.floor(this.cluster.leaseMs / 4)),
        logger: this.logger,
      });
    } catch (error) {
      await this.connection?.close().catch(() => {});
      throw new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', `cluster mode could not set up NATS state at ${this.settings.natsUrl}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Starts mirroring the directory and taking partitions; `handle` serves forwarded API calls. */
  async start(engine: Engine, handle: (request: ForwardedRequest) => Promise<ForwardedReply>): Promise<void> {
    this.engine = engine;
    this.handleForwarded = handle;
    await this.mirrorDirectory();
    await this.coordinator.start();
  }

  // Directory: projects and key hashes, shared by every node ----------------------------------

  private async mirrorDirectory(): Promise<void> {
    const watch = await this.directory.watch();
    this.directoryWatch = watch;
    let initialDone: () => void;
    const initial = new Promise<void>((resolve) => (initialDone = resolve));
    const status = await this.directory.status();
    if (status.values === 0) initialDone!();
    (async () => {
      for await (const entry of watch) {
        if (entry.operation === 'PUT') await this.applyDirectoryEntry(entry.key, decoder.decode(entry.value));
        if (entry.delta === 0) initialDone!();
      }
    })().catch((error: unknown) => this.logger.warn({ err: error }, 'directory watch ended'));
    await initial;
  }

  private async applyDirectoryEntry(key: string, value: string): Promise<void> {
    const store = this.engine.store;
    if (key.startsWith('project.')) {
      const project = JSON.parse(value) as ProjectRecord;
      await store.mirrorDirectory(project, null, project.id);
    } else if (key.startsWith('key.')) {
      await store.mirrorDirectory(null, key.slice('key.'.length), value);
    }
  }

  async project(record: ProjectRecord, apiKeyHash: string | null): Promise<void> {
    await this.directory.put(`project.${record.id}`, encoder.encode(JSON.stringify(record)));
    if (apiKeyHash) await this.directory.put(`key.${apiKeyHash}`, encoder.encode(record.id));
  }

  // Replication of partition state -------------------------------------------------------------

  async delivery(projectId: string, record: Parameters<StoreReplicator['delivery']>[1]): Promise<void> {
    await this.changelog.append(this.partitionOf(projectId), { kind: 'delivery', projectId, record });
  }

  async event(projectId: string, record: Parameters<StoreReplicator['event']>[1]): Promise<void> {
    await this.changelog.append(this.partitionOf(projectId), { kind: 'event', projectId, record });
  }

  async webhook(projectId: string, record: Parameters<StoreReplicator['webhook']>[1]): Promise<void> {
    await this.changelog.append(this.partitionOf(projectId), { kind: 'webhook', projectId, record });
  }

  // Partition ownership ------------------------------------------------------------------------

  async acquire(partition: number): Promise<void> {
    const restored = await this.changelog.restore(partition, (change) => this.engine.store.restoreRecord(change.projectId, change));
    const owns = (projectId: string) => this.partitionOf(projectId) === partition;
    const resumed = this.engine.resumeProjects(owns);
    this.rpc.serve(partition);
    const consumer = new NatsTransport({
      servers: this.settings.natsUrl!,
      stream: this.settings.natsStream,
      subjectPrefix: `${this.settings.natsSubjectPrefix}.${partition}`,
      durable: `${this.settings.natsDurable}-p${partition}`,
      streamSubjects: [`${this.settings.natsSubjectPrefix}.>`],
    });
    await consumer.start(this.engine as EventSink);
    this.consumers.set(partition, consumer);
    this.logger.info({ partition, restored, resumed }, 'partition restored from the changelog');
  }

  async release(partition: number): Promise<void> {
    const consumer = this.consumers.get(partition);
    this.consumers.delete(partition);
    await consumer?.stop();
    this.rpc.unserve(partition);
    await this.engine.releaseProjects((projectId) => this.partitionOf(projectId) === partition);
  }

  async forward(projectId: string, request: ForwardedRequest): Promise<ForwardedReply> {
    return this.rpc.forward(this.partitionOf(projectId), request, this.settings.deliveryTimeoutMs + 5_000);
  }

  async stop(): Promise<void> {
    await this.coordinator?.stop();
    this.directoryWatch?.stop();
    this.rpc?.close();
    await this.connection?.drain().catch(() => this.connection?.close());
  }
}
