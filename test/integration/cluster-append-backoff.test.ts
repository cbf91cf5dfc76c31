import { DiscardPolicy, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PartitionChangelog } from '../../src/cluster/changelog.js';
import type { DeliveryRecord } from '../../src/store/records.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { projectWithOneEvent, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode, a changelog that refuses appends at once while the node holds its lease (the
 * stream is full and discards new messages): an attempt whose start cannot be recorded is not
 * sent, and is started again after a growing wait rather than at once (which, paced only by the
 * failing append, added hundreds of interrupted starts a second to the delivery's log). Once the
 * stream takes appends again, the delivery is made, once.
 */

const PARTITIONS = 2;
/** How long the node is watched while its appends fail. */
const WINDOW_MS = 3_000;
/** Interrupted starts allowed in that window: a backoff from 100 ms makes about 5. */
const MAX_INTERRUPTED = 10;

beforeAll(() => ensureBuilt(), 120_000);

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('changelog appends failing fast while the lease is held', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.dispose();
    cluster = undefined;
  });

  it('an attempt whose start cannot be recorded is restarted with a backoff, never sent, and made once appends work', async () => {
    cluster = await startTestCluster({ partitions: PARTITIONS, label: 'append-backoff' });
    const c = cluster;
    const node = await c.start('node-a');
    await c.waitForOwnership(['node-a']);
    const changelogStream = `${c.names.natsStream}_CHANGELOG`;
    const manager = await jetstreamManager(c.nats);
    /** The changelog full: every append is refused at once (JetStream 10077), the lease untouched. */
    const refuseAppends = async (refuse: boolean) => {
      const { config, state } = await manager.streams.info(changelogStream);
      await manager.streams.update(changelogStream, { ...config, max_msgs: refuse ? state.messages : -1, discard: refuse ? DiscardPolicy.New : DiscardPolicy.Old });
    };

    // The first attempt fails, and the changelog stops taking appends before it answers: the retry's
    // start is the first that cannot be recorded.
    const receiver = await startReceiver({
      respond: async (_delivery, index) => {
        if (index > 0) return { status: 204 };
        await refuseAppends(true);
        return { status: 503 };
      },
    });
    const { project, deliveryId } = await projectWithOneEvent(c, node, 'append-backoff', receiver.url);

    const detail = async () => {
      const answer = await c.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${deliveryId}`, { key: project.apiKey });
      expect(answer.status).toBe(200);
      const transitions = answer.body.transitions as Array<{ event: string }>;
      return { body: answer.body, interrupted: transitions.filter((transition) => transition.event === 'ATTEMPT_INTERRUPTED').length };
    };
    await waitFor(async () => (await detail()).interrupted > 0, { timeoutMs: 10_000, intervalMs: 50, message: 'a start the changelog refused' });

    // Watched over a fixed window (the count of restarts is the measure, not a condition to wait for).
    const watchedUntil = Date.now() + WINDOW_MS;
    let interrupted = 0;
    while (Date.now() < watchedUntil) {
      interrupted = (await detail()).interrupted;
      expect(interrupted, 'interrupted starts while appends fail').toBeLessThanOrEqual(MAX_INTERRUPTED);
      expect(receiver.received, 'requests sent while starts cannot be recorded').toHaveLength(1);
      await pause(200);
    }
    expect((await detail()).body.status).not.toBe('succeeded');

    await refuseAppends(false);
    const done = await waitFor(
      async () => {
        const current = await detail();
        return current.body.status === 'succeeded' ? current : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, message: 'the delivery made once the changelog takes appends' },
    );
    expect(receiver.received).toHaveLength(2);
    expect(receiver.byWebhookId(deliveryId)).toHaveLength(2);
    expect(done.body.attempts).toBe(2);
    expect((done.body.transitions as Array<{ event: string }>).filter((transition) => transition.event === 'ATTEMPT_SUCCEEDED')).toHaveLength(1);
    console.info(`[append backoff] ${interrupted} interrupted starts in ${WINDOW_MS} ms of refused appends; ${done.interrupted} in all`);

    // The outcome reached the changelog too: a next owner would not send it again.
    const restored = new Map<string, DeliveryRecord>();
    await waitFor(
      async () => {
        await new PartitionChangelog(c.nats, changelogStream, `${c.names.clusterSubjectPrefix}.changelog`).restore(c.partitionOf(project.projectId), (change) => {
          if (change.kind === 'delivery') restored.set(change.record.id, change.record);
        });
        return restored.get(deliveryId)?.status === 'succeeded';
      },
      { timeoutMs: 5_000, intervalMs: 200, message: 'the succeeded delivery in the changelog' },
    );
  }, 90_000);
});
