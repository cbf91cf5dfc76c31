import { Kvm } from '@nats-io/kv';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest, type ApiAnswer, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `/readyz` of a cluster node (issue 36). It answered 200 within 1-2 s of the start, while only 34
 * of 64 partitions were held across three nodes (all were, 8 s later); right after all three were
 * ready, 10-35 of 64 webhook PUTs and event posts answered 503 `partition_moving`. Now a node is
 * ready once every partition has an owner, and a call for a partition changing owner waits for the
 * next one instead of answering 503.
 */

const PARTITIONS = 64;
const PROJECTS = 48;

beforeAll(() => ensureBuilt(), 120_000);

/** Partitions whose lease (in the cluster's leases bucket) no node holds now. */
async function partitionsWithoutOwner(cluster: TestCluster): Promise<number[]> {
  const leases = await new Kvm(cluster.nats).open(`${cluster.names.natsStream}_leases`);
  const without: number[] = [];
  for (let partition = 0; partition < cluster.partitions; partition++) {
    const entry = await leases.get(`lease.${partition}`);
    const lease = entry && entry.operation === 'PUT' && entry.value.length > 0 ? (entry.json() as { expiresAt: number }) : null;
    if (!lease || lease.expiresAt <= Date.now()) without.push(partition);
  }
  return without;
}

const ready = async (cluster: TestCluster, node: ClusterNodeHandle) => (await cluster.api(node, 'GET', '/readyz')).status === 200;

describe('readiness of a cluster node', () => {
  it('a node answers /readyz 200 only once every partition has an owner', async () => {
    const cluster = await startTestClusterForTest({ partitions: PARTITIONS, label: 'readiness-alone' });
    // Alone, the node takes the 64 partitions a few a round: nothing moves between its ready and our look.
    const node = await cluster.start('n1');
    await waitFor(() => ready(cluster, node), { timeoutMs: 60_000, intervalMs: 20, message: 'n1 ready' });
    expect(await partitionsWithoutOwner(cluster)).toEqual([]);
  }, 120_000);

  it('three nodes started together: once all are ready, a webhook PUT and an event for each of 48 projects, each to any node, are accepted, none answered 503', async () => {
    const receiver = await startReceiver();
    const cluster = await startTestClusterForTest({ partitions: PARTITIONS, label: 'readiness-three' });
    const nodes = await Promise.all(['n1', 'n2', 'n3'].map((nodeId) => cluster.start(nodeId)));
    await Promise.all(nodes.map((node) => waitFor(() => ready(cluster, node), { timeoutMs: 60_000, intervalMs: 20, message: `${node.nodeId} ready` })));

    // At once, while the partitions are still settling on their owners.
    const answers: Array<{ what: string; answer: ApiAnswer }> = [];
    await Promise.all(
      Array.from({ length: PROJECTS }, async (_, i) => {
        const project = await cluster.createProject(nodes[i % 3]!, `ready-${i}`);
        const configured = await cluster.api(nodes[(i + 1) % 3]!, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
        answers.push({ what: `PUT /v1/webhook of ${project.projectId} on ${nodes[(i + 1) % 3]!.nodeId}`, answer: configured });
        const posted = await cluster.api(nodes[(i + 2) % 3]!, 'POST', '/v1/events', { key: project.apiKey, body: { type: 'service.trigger.event', data: { i } } });
        answers.push({ what: `POST /v1/events of ${project.projectId} on ${nodes[(i + 2) % 3]!.nodeId}`, answer: posted });
      }),
    );
    const refused = answers.filter(({ answer }) => answer.status !== 200 && answer.status !== 202).map(({ what, answer }) => `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
    expect(refused).toEqual([]);
    await waitFor(() => receiver.received.length >= PROJECTS, { timeoutMs: 30_000, message: 'every event delivered' });
  }, 180_000);
});
