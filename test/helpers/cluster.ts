import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
import { onTestFinished } from 'vitest';
import { desiredPartitions } from '../../src/cluster/rendezvous.js';
import { partitionOf } from '../../src/sdk/partition.js';
import { SETUP_DEADLINE_MS } from '../../src/transport/nats-streams.js';
import { startChildNode, type ChildNode } from './child-node.js';
import { SHARED_NATS_URL, connectNats, deleteStreams, type NatsNames } from './nats.js';
import { ALL_TYPES } from './hookline.js';
import { makeTempDir } from './temp-dir.js';
import { waitFor } from './wait-for.js';

/**
 * A Hookline cluster of child processes (`node dist/cli/main.js serve --cluster`) on the shared NATS:
 * each node has its own LMDB directory and port; the cluster has its own stream, subjects, durables
 * and KV buckets (all derived from a random suffix), deleted by `dispose()`. Call `ensureBuilt()`
 * (child-node.ts) first.
 */

export const CLUSTER_ADMIN_KEY = 'cluster-admin-key';

/** How many of each node's last log lines a formation that timed out reports. */
const NODE_LINES_KEPT = 30;

export interface ClusterNames extends NatsNames {
  clusterSubjectPrefix: string;
}

export function uniqueClusterNames(): ClusterNames {
  const suffix = randomBytes(5).toString('hex');
  return {
    natsStream: `HL_CLUSTER_${suffix}`,
    natsSubjectPrefix: `hlcluster.${suffix}.events`,
    natsDurable: `hookline_${suffix}`,
    clusterSubjectPrefix: `hlcluster.${suffix}.cluster`,
  };
}

/** Every stream the cluster creates: events, changelog and the two KV buckets (a bucket B is stream KV_B). */
export function clusterStreams(names: ClusterNames): string[] {
  return [names.natsStream, `${names.natsStream}_CHANGELOG`, `KV_${names.natsStream}_directory`, `KV_${names.natsStream}_leases`];
}

export interface ClusterStatus {
  nodeId: string;
  partitions: number[];
  partitionCount: number;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the answer is not JSON. */
  body: any;
}

export interface ClusterNodeHandle {
  readonly nodeId: string;
  readonly url: string;
  readonly child: ChildNode;
  /** False once the process has exited. */
  readonly alive: boolean;
  /** The `cluster` part of its `GET /healthz`. */
  status(): Promise<ClusterStatus>;
  /** SIGKILL; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** Its log records (pino JSON) whose `msg` matches. */
  logs(msg: RegExp): Array<Record<string, any>>;
}

export interface TestCluster {
  readonly names: ClusterNames;
  readonly partitions: number;
  readonly leaseMs: number;
  readonly nodes: Map<string, ClusterNodeHandle>;
  /** A connection to the cluster's NATS (for publishing), closed by `dispose()`. */
  readonly nats: NatsConnection;
  /** The HOOKLINE_* settings a node of this cluster starts with (its data directory and port aside). */
  settingsFor(nodeId: string): Record<string, string>;
  /** Starts a node (`serve --cluster`, more HOOKLINE_* settings in `settings`) and resolves once it serves HTTP. */
  start(nodeId: string, settings?: Record<string, string>): Promise<ClusterNodeHandle>;
  node(nodeId: string): ClusterNodeHandle;
  live(): ClusterNodeHandle[];
  partitionOf(projectId: string): number;
  /** Partition → node id, from the live nodes' `/healthz`. */
  ownership(): Promise<Map<number, string>>;
  /**
   * Waits until every partition is served by exactly the node rendezvous hashing gives it among
   * `nodeIds` (and by no other), and returns that map.
   */
  waitForOwnership(nodeIds: string[], timeoutMs?: number): Promise<Map<number, string>>;
  /** Starts `nodeIds` together, then `waitForOwnership(nodeIds, timeoutMs)`. */
  startSettled(nodeIds: string[], timeoutMs?: number): Promise<Map<number, string>>;
  /** One HTTP call to a node; `body` is JSON-encoded. */
  api(node: ClusterNodeHandle, method: string, path: string, options?: { key?: string; body?: unknown; headers?: Record<string, string> }): Promise<ApiAnswer>;
  /**
   * The same, retried while the answer is a 503 (a partition changing owner) or the connection
   * fails, until `timeoutMs`; returns the first other answer.
   */
  apiSettled(node: ClusterNodeHandle, method: string, path: string, options?: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number }): Promise<ApiAnswer>;
  /** `POST /admin/v1/projects` on `node`. */
  createProject(node: ClusterNodeHandle, name: string): Promise<{ projectId: string; apiKey: string }>;
  /**
   * Kills every node still running, deletes the cluster's streams and buckets and the data
   * directories, and leaves each node's log in test-artifacts/cluster/<label>-<nodeId>.log.
   */
  dispose(): Promise<void>;
}

export interface TestClusterOptions {
  /** @default 16 */
  partitions?: number;
  /** @default 2000 */
  leaseMs?: number;
  /** More HOOKLINE_* settings for every node. */
  settings?: Record<string, string>;
  /** Names the node logs kept in test-artifacts/cluster. @default "cluster" */
  label?: string;
  /** Another NATS than the shared one: the nodes' HOOKLINE_NATS_* settings, and a client connection like theirs. @default the shared NATS */
  nats?: { settings: Record<string, string>; connect(): Promise<NatsConnection> };
}

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-artifacts', 'cluster');

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const names = uniqueClusterNames();
  const partitions = options.partitions ?? 16;
  const leaseMs = options.leaseMs ?? 2_000;
  const nodes = new Map<string, ClusterNodeHandle>();
  const dirs: Array<{ remove(): void }> = [];
  const nats = options.nats ? await options.nats.connect() : await connectNats(SHARED_NATS_URL);

  const settingsFor = (nodeId: string): Record<string, string> => ({
    ...(options.nats?.settings ?? { HOOKLINE_NATS_URL: SHARED_NATS_URL }),
    HOOKLINE_NATS_STREAM: names.natsStream,
    HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix,
    HOOKLINE_NATS_DURABLE: names.natsDurable,
    HOOKLINE_CLUSTER_SUBJECT_PREFIX: names.clusterSubjectPrefix,
    HOOKLINE_NODE_ID: nodeId,
    HOOKLINE_PARTITIONS: String(partitions),
    HOOKLINE_LEASE_TTL: `${leaseMs}ms`,
    HOOKLINE_ADMIN_KEY: CLUSTER_ADMIN_KEY,
    HOOKLINE_API_KEY: `default-key-${names.natsStream}`,
    HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
    HOOKLINE_RETRY_JITTER: '0',
    HOOKLINE_RETRY_SCHEDULE: '0,300ms,300ms,300ms,300ms',
    HOOKLINE_DELIVERY_TIMEOUT: '5s',
    ...options.settings,
  });

  const api: TestCluster['api'] = async (node, method, path, callOptions = {}) => {
    const headers: Record<string, string> = { ...(callOptions.headers ?? {}) };
    if (callOptions.key !== undefined) headers.authorization = `Bearer ${callOptions.key}`;
    let body: string | undefined;
    if (callOptions.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(callOptions.body);
    }
    const response = await fetch(`${node.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };

  /** The node's partitions as its /healthz lists them, or why it did not (bounded: a node that hangs is what is being diagnosed). */
  const partitionsOf = (node: ClusterNodeHandle): Promise<string> => {
    const unanswered = new Promise<string>((resolve) => setTimeout(resolve, 2_000, 'no answer to /healthz within 2 s').unref());
    const answered = node.status().then((status) => status.partitions.join(','), (error: unknown) => String(error));
    return Promise.race([answered, unanswered]);
  };

  /** Each node's partitions and its last log lines: what a formation that timed out is diagnosed from. */
  const describeNodes = async (): Promise<string> => {
    const views: string[] = [];
    for (const node of nodes.values()) {
      const partitionsHeld = node.alive ? await partitionsOf(node) : 'exited';
      views.push(`${node.nodeId} (${partitionsHeld}):\n${node.child.lines.slice(-NODE_LINES_KEPT).join('\n')}`);
    }
    return views.join('\n');
  };

  const cluster: TestCluster = {
    names,
    partitions,
    leaseMs,
    nodes,
    nats,
    settingsFor,
    async start(nodeId, settings = {}) {
      const dir = makeTempDir(`hookline-cluster-${nodeId}-`);
      dirs.push(dir);
      // Longer than a node's own bound on a setup step, so a slow NATS ends in the node's own error (or its retry warnings), not in a silent test timeout.
      const child = await startChildNode(dir.path, { ...settingsFor(nodeId), ...settings }, { args: ['--cluster'], startTimeoutMs: SETUP_DEADLINE_MS + 10_000 });
      let alive = true;
      void child.exited.then(() => (alive = false));
      const handle: ClusterNodeHandle = {
        nodeId,
        url: child.url,
        child,
        get alive() {
          return alive;
        },
        async status() {
          const answer = await api(handle, 'GET', '/healthz');
          if (answer.status !== 200 || !answer.body?.cluster) throw new Error(`healthz of ${nodeId}: ${answer.status}`);
          return answer.body.cluster as ClusterStatus;
        },
        async kill9() {
          if (!alive) return;
          child.process.kill('SIGKILL');
          await child.exited;
        },
        logs(msg) {
          const records: Array<Record<string, any>> = [];
          for (const line of child.lines) {
            try {
              const record = JSON.parse(line) as Record<string, any>;
              if (typeof record.msg === 'string' && msg.test(record.msg)) records.push(record);
            } catch {
              // not a log record
            }
          }
          return records;
        },
      };
      nodes.set(nodeId, handle);
      return handle;
    },
    node(nodeId) {
      const handle = nodes.get(nodeId);
      if (!handle) throw new Error(`no node ${nodeId}`);
      return handle;
    },
    live: () => [...nodes.values()].filter((node) => node.alive),
    partitionOf: (projectId) => partitionOf(projectId, partitions),
    async ownership() {
      const owners = new Map<number, string>();
      for (const node of cluster.live()) {
        for (const partition of (await node.status()).partitions) owners.set(partition, node.nodeId);
      }
      return owners;
    },
    waitForOwnership(nodeIds, timeoutMs = 20_000) {
      const expected = new Map<number, string>();
      for (const nodeId of nodeIds) for (const partition of desiredPartitions(nodeId, nodeIds, partitions)) expected.set(partition, nodeId);
      const settled = waitFor(
        async () => {
          const seen = new Map<number, string>();
          for (const node of cluster.live()) {
            for (const partition of (await node.status()).partitions) {
              if (seen.has(partition)) return null; // claimed twice at this instant: not settled
              seen.set(partition, node.nodeId);
            }
          }
          if (seen.size !== partitions) return null;
          for (const [partition, nodeId] of expected) if (seen.get(partition) !== nodeId) return null;
          return seen;
        },
        { timeoutMs, intervalMs: 50, message: `partitions owned as rendezvous hashing over ${nodeIds.join(', ')} says` },
      );
      return settled.catch(async (error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}\n${await describeNodes()}`, { cause: error });
      });
    },
    async startSettled(nodeIds, timeoutMs) {
      await Promise.all(nodeIds.map((nodeId) => cluster.start(nodeId)));
      return cluster.waitForOwnership(nodeIds, timeoutMs);
    },
    api,
    async apiSettled(node, method, path, callOptions = {}) {
      const deadline = Date.now() + (callOptions.timeoutMs ?? 15_000);
      for (;;) {
        let answer: ApiAnswer | null = null;
        let failure: unknown = null;
        try {
          answer = await api(node, method, path, callOptions);
        } catch (error) {
          failure = error;
        }
        if (answer && answer.status !== 503) return answer;
        if (Date.now() > deadline) {
          throw new Error(`${method} ${path} on ${node.nodeId} kept failing: ${answer ? `${answer.status} ${JSON.stringify(answer.body)}` : String(failure)}`);
        }
        await pause(50);
      }
    },
    async createProject(node, name) {
      const answer = await api(node, 'POST', '/admin/v1/projects', { key: CLUSTER_ADMIN_KEY, body: { name } });
      if (answer.status !== 201) throw new Error(`creating project ${name} on ${node.nodeId}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body as { projectId: string; apiKey: string };
    },
    async dispose() {
      await Promise.all(cluster.live().map((node) => node.kill9()));
      mkdirSync(ARTIFACTS, { recursive: true });
      for (const node of nodes.values()) {
        const name = `${options.label ?? 'cluster'}-${node.nodeId}`;
        writeFileSync(join(ARTIFACTS, `${name}.log`), `${node.child.lines.join('\n')}\n`);
        if (node.child.stderr() !== '') writeFileSync(join(ARTIFACTS, `${name}.stderr.log`), node.child.stderr());
      }
      await deleteStreams(nats, clusterStreams(names)).catch(() => {});
      await nats.close().catch(() => {});
      for (const dir of dirs) dir.remove();
    },
  };
  return cluster;
}

/** A cluster for the running test alone: disposed when the test finishes, passed or failed. */
export async function startTestClusterForTest(options: TestClusterOptions = {}): Promise<TestCluster> {
  const cluster = await startTestCluster(options);
  onTestFinished(() => cluster.dispose());
  return cluster;
}

/**
 * A project created on `node` with its webhook active on `callbackUrl` for every event type, and
 * one event ingested through `node`: the project and the event's delivery id.
 */
export async function projectWithOneEvent(cluster: TestCluster, node: ClusterNodeHandle, name: string, callbackUrl: string): Promise<{ project: { projectId: string; apiKey: string }; deliveryId: string }> {
  const project = await cluster.createProject(node, name);
  const configured = await cluster.apiSettled(node, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl, status: 'active', eventTypes: ALL_TYPES } });
  if (configured.status !== 200) throw new Error(`PUT /v1/webhook on ${node.nodeId}: ${configured.status} ${JSON.stringify(configured.body)}`);
  const ingested = await cluster.apiSettled(node, 'POST', '/v1/events', { key: project.apiKey, body: { type: 'service.trigger.event', data: { n: 1 } } });
  if (ingested.status !== 202) throw new Error(`POST /v1/events on ${node.nodeId}: ${ingested.status} ${JSON.stringify(ingested.body)}`);
  return { project, deliveryId: ingested.body.deliveryId as string };
}
