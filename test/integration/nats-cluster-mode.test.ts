import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startContinuousPublisher } from '../helpers/nats.js';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode on a secured three-server NATS cluster (TLS, password, client certificates) with
 * HOOKLINE_NATS_REPLICAS=3: three Hookline nodes started at the same moment all come up (creating
 * the same streams and buckets concurrently), and when one NATS server and one Hookline node are
 * killed at the same time under load, every event JetStream acked is delivered and the dead node's
 * partitions move to the survivors.
 */

const PARTITIONS = 8;
const LEASE_MS = 2_000;
const NODES = ['node-a', 'node-b', 'node-c'];

beforeAll(() => ensureBuilt(), 120_000);

let nats: TestNatsCluster | null = null;
let cluster: TestCluster | null = null;

afterEach(async () => {
  await cluster?.dispose();
  await nats?.dispose();
  cluster = nats = null;
});

describe('cluster mode on a three-server NATS cluster', () => {
  it('three nodes started together come up; kill -9 one NATS server and one node under load: nothing acked lost, partitions move', async () => {
    nats = await startNatsCluster('users');
    const natsCluster = nats;
    cluster = await startTestCluster({
      partitions: PARTITIONS,
      leaseMs: LEASE_MS,
      label: 'nats-cluster-mode',
      nats: { settings: natsCluster.hooklineSettings(), connect: () => natsCluster.connect() },
      settings: { HOOKLINE_NATS_REPLICAS: '3', HOOKLINE_RETRY_SCHEDULE: '0,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms' },
    });
    const c = cluster;
    // All at once: each node creates the same streams and KV buckets at the same moment.
    await Promise.all(NODES.map((nodeId) => c.start(nodeId)));
    const owners = await c.waitForOwnership(NODES, 60_000);
    const leases = await natsCluster.streamLeader(c.nats, `KV_${c.names.natsStream}_leases`);
    expect(leases).toMatch(/^n\d$/);

    const receiver = await startReceiver();
    const projects: Array<{ projectId: string; apiKey: string }> = [];
    for (let i = 0; i < 6; i++) projects.push(await c.createProject(c.node('node-a'), `nats-mode-${i}`));
    for (const project of projects) {
      const configured = await c.apiSettled(c.node('node-b'), 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
      expect(configured.status).toBe(200);
    }
    const victim = c.node(owners.get(c.partitionOf(projects[0]!.projectId))!);
    const survivors = NODES.filter((nodeId) => nodeId !== victim.nodeId);

    // Two publishes in flight: a steady load, not a flood that a 2-core CI must then deliver.
    const events = startContinuousPublisher(c.nats, { projectId: projects.map((project) => project.projectId), subjectPrefix: c.names.natsSubjectPrefix, partitions: PARTITIONS, tag: 'mode', concurrency: 2, deadlineMs: 180_000 });
    await waitFor(() => events.acked.size >= 200 && receiver.received.length >= 100, { timeoutMs: 60_000, message: 'events flowing before the kills' });

    // The NATS server leading the events stream, and the owner of project 0's partition, together.
    const natsVictim = natsCluster.member(await natsCluster.streamLeader(c.nats, c.names.natsStream));
    await Promise.all([natsVictim.kill9(), victim.kill9()]);
    const ackedAtKill = events.acked.size;

    const moved = await c.waitForOwnership(survivors, 60_000);
    expect(moved.get(c.partitionOf(projects[0]!.projectId))).not.toBe(victim.nodeId);
    await waitFor(() => events.acked.size >= ackedAtKill + 200, { timeoutMs: 90_000, message: 'publishes acked after the kills' });
    await events.stop();

    const received = () => new Set(receiver.received.map((delivery) => delivery.envelope.id));
    const missing = () => {
      const seen = received();
      return [...events.acked].filter((id) => !seen.has(id));
    };
    await waitFor(() => missing().length === 0, { timeoutMs: 120_000, intervalMs: 250, message: `all ${events.acked.size} acked events delivered (missing ${missing().slice(0, 5).join(', ')})` });
    const webhookIds = new Map<string, Set<string>>();
    for (const delivery of receiver.received) {
      expect(events.attempted.has(delivery.envelope.id)).toBe(true);
      const ids = webhookIds.get(delivery.envelope.id) ?? new Set<string>();
      ids.add(delivery.webhookId);
      webhookIds.set(delivery.envelope.id, ids);
    }
    // Repeats are the same delivery sent again (at least once), never a second delivery of an event.
    for (const [id, ids] of webhookIds) expect(ids.size, `deliveries of ${id}`).toBe(1);
    for (const survivor of survivors) expect(c.node(survivor).alive).toBe(true);
    console.info(`NATS ${natsVictim.name} and ${victim.nodeId} killed: ${events.acked.size} acked events delivered, ${receiver.received.length - webhookIds.size} repeats`);
  }, 420_000);
});
