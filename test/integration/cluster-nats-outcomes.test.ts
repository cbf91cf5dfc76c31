import { jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { consumeOutcomes, outcomeStreamName } from '../../src/sdk/nats.js';
import type { Outcome } from '../../src/sdk/nats.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import type { ClusterNodeHandle, TestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * HOOKLINE_NATS_OUTCOMES in cluster mode: the node that ends a delivery publishes its outcome, and
 * the node that takes the partition over (restoring it from the changelog) publishes none again.
 */

beforeAll(() => ensureBuilt(), 120_000);

async function send(cluster: TestCluster, node: ClusterNodeHandle, apiKey: string, fail: boolean): Promise<string> {
  const answer = await cluster.apiSettled(node, 'POST', '/v1/events', { key: apiKey, body: { type: 'service.trigger.event', data: { fail } } });
  if (answer.status !== 202) throw new Error(`POST /v1/events: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.deliveryId as string;
}

async function statusOf(cluster: TestCluster, node: ClusterNodeHandle, apiKey: string, deliveryId: string): Promise<string | null> {
  const answer = await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${deliveryId}`, { key: apiKey });
  return answer.status === 200 ? (answer.body.status as string) : null;
}

describe('outcomes on NATS in a cluster', () => {
  it('one outcome per delivery outcome, also after the owner is killed and another node restores its partition', async () => {
    const cluster = await startTestClusterForTest({ partitions: 2, label: 'outcomes', settings: { HOOKLINE_NATS_OUTCOMES: '1', HOOKLINE_RETRY_SCHEDULE: '0,50ms,50ms' } });
    onTestFinished(async () => void (await (await jetstreamManager(cluster.nats)).streams.delete(outcomeStreamName(cluster.names.natsStream)).catch(() => false)));
    await cluster.startSettled(['node-a', 'node-b']);
    const receiver = await startReceiver({ respond: (delivery) => ({ status: delivery.envelope.data.fail ? 500 : 204 }) });
    const entry = cluster.node('node-a');
    const project = await cluster.createProject(entry, 'outcomes');
    await cluster.apiSettled(entry, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });

    const outcomes: Outcome[] = [];
    const consumer = await consumeOutcomes(cluster.nats, (outcome) => void outcomes.push(outcome), { durable: 'outcomes_test', stream: cluster.names.natsStream, subjectPrefix: cluster.names.natsSubjectPrefix, projectId: project.projectId });
    onTestFinished(() => consumer.stop());
    const failing = await send(cluster, entry, project.apiKey, true);
    const passing = await send(cluster, entry, project.apiKey, false);
    await waitFor(() => outcomes.some((o) => o.deliveryId === failing) && outcomes.some((o) => o.deliveryId === passing), { timeoutMs: 20_000, message: 'the first two outcomes' });
    expect(await statusOf(cluster, entry, project.apiKey, failing)).toBe('dead_lettered');

    // The project's owner dies; the other node restores the partition from the changelog and serves it.
    const ownership = await cluster.ownership();
    const owner = cluster.node(ownership.get(cluster.partitionOf(project.projectId))!);
    await owner.kill9();
    const survivor = cluster.live()[0]!;
    await cluster.waitForOwnership([survivor.nodeId], 20_000);
    const later = await send(cluster, survivor, project.apiKey, true);
    await waitFor(() => outcomes.some((o) => o.deliveryId === later), { timeoutMs: 20_000, message: 'the outcome of the delivery made after the takeover' });
    await waitFor(
      async () => {
        const info = await (await jetstreamManager(cluster.nats)).consumers.info(outcomeStreamName(cluster.names.natsStream), 'outcomes_test');
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      { message: 'every outcome in the stream handed over' },
    );

    const deliveryOutcomes = outcomes.filter((o) => o.deliveryId !== null).map((o) => [o.deliveryId, o.type, o.attempts]);
    expect(deliveryOutcomes.sort()).toEqual(
      [
        [failing, 'dead_lettered', 3],
        [passing, 'succeeded', 1],
        [later, 'dead_lettered', 3],
      ].sort(),
    );
  }, 120_000);
});
