import { join } from 'node:path';
import { waitFor } from '../../test/helpers/wait-for.js';
import { HooklineClient } from '../../src/sdk/client.js';
import { atRendezvousLayout } from './layout.js';
import { startNemesisNats, type NemesisNats } from './nats-cluster.js';
import { makeNodes, type NemesisNode } from './nodes.js';
import type { ProjectKeys } from './producers.js';
import { RECEIVER_BEHAVIOURS, startNemesisReceiver, type NemesisReceiver } from './receivers.js';

/**
 * Everything a run starts, on loopback ports and under one temporary directory: the NATS cluster,
 * the three Hookline nodes (settings below), and one project per receiver, each with its webhook
 * configured and its secret handed to its receiver.
 */

export const NODE_IDS = ['node-1', 'node-2', 'node-3'] as const;
export const NATS_SERVERS = ['n1', 'n2', 'n3'] as const;
export const ADMIN_KEY = 'nemesis-admin-key';
/** The ingest stream, its subjects and its durable consumers' name: Hookline's defaults, which the nodes keep. */
export const INGEST = { stream: 'HOOKLINE_EVENTS', subjectPrefix: 'hookline.events', durable: 'hookline' } as const;
/** Projects per receiver behaviour. */
const PROJECTS_PER_BEHAVIOUR = 3;
/** How long a node may take to serve after a start (NATS may be electing, or one server down). */
const NODE_START_TIMEOUT_MS = 60_000;
const SETUP_TIMEOUT_MS = 90_000;

export interface ClusterSettings {
  partitions: number;
  leaseMs: number;
  /** HOOKLINE_DELIVERY_TIMEOUT. */
  deliveryTimeoutMs: number;
}

export interface Project extends ProjectKeys {
  receiver: NemesisReceiver;
}

export interface NemesisSystem {
  nats: NemesisNats;
  nodes: NemesisNode[];
  projects: Project[];
  /** Every node running and every partition held by the node rendezvous hashing gives it, per their /healthz (`atRendezvousLayout`). */
  waitForOwnership(timeoutMs: number): Promise<void>;
  /** A client of `project` on `node`. */
  client(node: NemesisNode, project: ProjectKeys): HooklineClient;
  stop(): Promise<void>;
}

/** The HOOKLINE_* settings of every node: the cluster's shape, short retries so a run settles, receivers on loopback. */
function nodeSettings(settings: ClusterSettings): Record<string, string> {
  return {
    HOOKLINE_NATS_REPLICAS: '3',
    HOOKLINE_PARTITIONS: String(settings.partitions),
    HOOKLINE_LEASE_TTL: `${settings.leaseMs}ms`,
    HOOKLINE_ADMIN_KEY: ADMIN_KEY,
    // Set, so that nodes started together never each make a key for `default`.
    HOOKLINE_API_KEY: 'nemesis-default-key',
    HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
    HOOKLINE_RETRY_SCHEDULE: '0,250ms,500ms,1s,1s,2s,2s,3s,3s,3s,5s,5s',
    HOOKLINE_DELIVERY_TIMEOUT: `${settings.deliveryTimeoutMs}ms`,
  };
}

/** Retries `call` while it fails (a partition moving, a node starting), until `timeoutMs`. */
export function settledCall<T>(what: string, call: () => Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
  return waitFor(async () => (await call()) ?? null, { timeoutMs, intervalMs: 250, message: what }) as Promise<NonNullable<T>>;
}

export async function startSystem(dir: string, settings: ClusterSettings, log: (line: string) => void): Promise<NemesisSystem> {
  const nats = await startNemesisNats(join(dir, 'nats'), NATS_SERVERS);
  log(`NATS cluster up: ${nats.directUrls}`);
  const nodes = await makeNodes({ dir: join(dir, 'nodes'), ids: NODE_IDS, nats, settings: nodeSettings(settings), startTimeoutMs: NODE_START_TIMEOUT_MS });
  const receivers: NemesisReceiver[] = [];
  const clients = new Map<string, HooklineClient>();
  const system: NemesisSystem = {
    nats,
    nodes,
    projects: [],
    async waitForOwnership(timeoutMs) {
      await waitFor(
        async () => {
          const held = new Map<string, number[]>();
          for (const node of nodes) {
            if (node.state !== 'running') return false;
            const health = (await (await fetch(`${node.url}/healthz`, { signal: AbortSignal.timeout(2_000) })).json()) as { cluster?: { partitions: number[] } };
            held.set(node.id, health.cluster?.partitions ?? []);
          }
          return atRendezvousLayout(held, nodes.map((node) => node.id), settings.partitions);
        },
        { timeoutMs, intervalMs: 250, message: 'every partition held by the node rendezvous hashing gives it' },
      );
    },
    client(node, project) {
      const key = `${node.id} ${project.projectId}`;
      let client = clients.get(key);
      if (!client) clients.set(key, (client = new HooklineClient({ baseUrl: node.url, apiKey: project.apiKey })));
      return client;
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.kill9()));
      await Promise.all(nodes.flatMap((node) => [node.httpLink, ...node.natsLinks.values()]).map((link) => link.close()));
      await nats.stop();
      await Promise.all(receivers.map((each) => each.receiver.close()));
    },
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
    await system.waitForOwnership(SETUP_TIMEOUT_MS);
    log(`nodes up, every partition held: ${nodes.map((node) => `${node.id} pid ${node.pid}`).join(', ')}`);
    for (const behaviour of RECEIVER_BEHAVIOURS) {
      for (let index = 0; index < PROJECTS_PER_BEHAVIOUR; index++) {
        const receiver = await startNemesisReceiver(behaviour);
        receivers.push(receiver);
        const node = nodes[system.projects.length % nodes.length]!;
        const keys = await settledCall(`project ${behaviour}-${index + 1}`, async () => {
          const answer = await fetch(`${node.url}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `${behaviour}-${index + 1}` }), signal: AbortSignal.timeout(5_000) });
          return answer.status === 201 ? ((await answer.json()) as ProjectKeys) : null;
        });
        const client = system.client(node, keys);
        await settledCall(`webhook of ${keys.projectId}`, () => client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] }, { signal: AbortSignal.timeout(5_000) }));
        receiver.receiver.secret = (await settledCall(`secret of ${keys.projectId}`, () => client.getSecret({ signal: AbortSignal.timeout(5_000) }))).secret;
        system.projects.push({ ...keys, receiver });
      }
    }
    log(`projects: ${system.projects.map((project) => `${project.projectId} (${project.receiver.behaviour})`).join(', ')}`);
  } catch (error) {
    await system.stop();
    throw error;
  }
  return system;
}
