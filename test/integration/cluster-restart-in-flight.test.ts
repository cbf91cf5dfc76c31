import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { projectWithOneEvent, startTestClusterForTest } from '../helpers/cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode, the same node restarted (same node id, same LMDB) after a kill -9 with an attempt in
 * flight. A cluster node commits an attempt's start to LMDB only with its outcome; before sending,
 * it appends the start to the changelog alone. So the restarted node's LMDB lacks the start, and
 * only the partition's restore from the changelog tells it that the attempt may have reached the
 * receiver: the log must count it as interrupted, and the receipt it made as an attempt.
 */

beforeAll(() => ensureBuilt(), 120_000);

describe('a cluster node restarted with an attempt in flight', () => {
  it('restores the attempt\'s start from the changelog: the log shows it interrupted, then made again under the same webhook-id', async () => {
    const cluster = await startTestClusterForTest({ partitions: 2, label: 'restart-in-flight' });
    const dataDir = makeTempDir('hookline-cluster-restart-');
    try {
      const settings = { HOOKLINE_DATA_DIR: dataDir.path };
      let node = await cluster.start('node-a', settings);
      await cluster.waitForOwnership(['node-a']);
      // The first request is never answered: the node dies with it in flight.
      const receiver = await startReceiver({ respond: (_delivery, index) => (index === 0 ? 'hang' : { status: 204 }) });
      const { project, deliveryId } = await projectWithOneEvent(cluster, node, 'restart-in-flight', receiver.url);
      await waitFor(() => receiver.received.length === 1, { timeoutMs: 10_000, intervalMs: 20, message: 'the first attempt at the receiver' });

      await node.kill9();
      node = await cluster.start('node-a', settings);
      await cluster.waitForOwnership(['node-a'], 15_000);

      const done = await waitFor(
        async () => {
          const answer = await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${deliveryId}`, { key: project.apiKey });
          return answer.status === 200 && answer.body.status === 'succeeded' ? answer.body : null;
        },
        { timeoutMs: 20_000, intervalMs: 100, message: 'the delivery made after the restart' },
      );
      const events = (done.transitions as Array<{ event: string }>).map((transition) => transition.event);
      expect(events.filter((event) => event === 'ATTEMPT_INTERRUPTED'), `transitions: ${events.join(', ')}`).toHaveLength(1);
      expect(events.filter((event) => event === 'ATTEMPT_SUCCEEDED')).toHaveLength(1);
      expect(receiver.byWebhookId(deliveryId)).toHaveLength(2);
      // Both receipts are accounted for: the interrupted attempt and the one that succeeded.
      expect(done.attempts + events.filter((event) => event === 'ATTEMPT_INTERRUPTED').length).toBe(2);
    } finally {
      // Its node first: the directory goes before the cluster's own disposal runs.
      for (const live of cluster.live()) await live.kill9();
      dataDir.remove();
    }
  }, 90_000);
});
