import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A takeover of a partition holding more waiting deliveries than a lifecycle keeps in memory
 * (HOOKLINE_DELIVERY_WINDOW): the changelog (a snapshot and the batches after it) is laid into the
 * new owner's LMDB as it is read; the new owner counts every waiting delivery, and once the receiver
 * is back delivers each of them, none twice.
 */

beforeAll(() => ensureBuilt(), 120_000);

const EVENTS = 240;
const WINDOW = 20;
const waitingMetric = new RegExp(`^hookline_waiting_deliveries(\\{[^}]*\\})? ${EVENTS}$`, 'm');

describe('cluster takeover with a backlog', () => {
  it('after a kill -9, the new owner counts and then delivers every waiting delivery, beyond its window', async () => {
    let up = false;
    const accepted: string[] = [];
    const receiver = await startReceiver({
      respond: (delivery) => {
        if (!up) return { status: 503 };
        accepted.push(delivery.envelope.id);
        return { status: 204 };
      },
    });
    const cluster = await startTestCluster({
      partitions: 2,
      label: 'takeover-backlog',
      // A first attempt fails (503) and the next falls due 20 s later; no breaker, so each is tried.
      settings: { HOOKLINE_DELIVERY_WINDOW: String(WINDOW), HOOKLINE_CHANGELOG_SNAPSHOT_EVERY: '100', HOOKLINE_RETRY_SCHEDULE: '0,20s,20s,20s', HOOKLINE_CIRCUIT_FAILURES: '0' },
    });
    onTestFinished(() => cluster.dispose());
    await cluster.startSettled(['node-a']);
    const nodeA = cluster.node('node-a');
    const { projectId, apiKey } = await cluster.createProject(nodeA, 'backlog');
    expect((await cluster.apiSettled(nodeA, 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } })).status).toBe(200);
    const ids = Array.from({ length: EVENTS }, (_, i) => `evt_backlog_${String(i).padStart(3, '0')}`);
    for (let from = 0; from < ids.length; from += 60) {
      const events = ids.slice(from, from + 60).map((id) => ({ id, type: 'service.trigger.event', data: {} }));
      expect((await cluster.apiSettled(nodeA, 'POST', '/v1/events/batch', { key: apiKey, body: { events } })).status).toBe(202);
    }
    // Every delivery waits (the window's first attempts failed, the rest wait their turn on disk);
    // a snapshot folded part of the partition.
    const partition = cluster.partitionOf(projectId);
    await waitFor(() => nodeA.logs(/^partition changelog snapshot written$/).some((line) => line.partition === partition), { timeoutMs: 20_000, message: 'a snapshot of the partition' });
    const metricsBefore = await cluster.apiSettled(nodeA, 'GET', '/metrics');
    expect(metricsBefore.body).toMatch(waitingMetric);

    await nodeA.kill9();
    await cluster.startSettled(['node-b'], 30_000);
    const nodeB = cluster.node('node-b');
    const [restored] = nodeB.logs(/^partition restored from the changelog$/).filter((line) => line.partition === partition);
    expect(restored!.restored).toBeGreaterThan(2 * EVENTS);
    const metrics = await cluster.apiSettled(nodeB, 'GET', '/metrics');
    expect(metrics.body).toMatch(waitingMetric);
    const [resumed] = nodeB.logs(/^resumed waiting deliveries from LMDB/);
    expect(resumed).toMatchObject({ waiting: EVENTS });
    expect(resumed!.held).toBeLessThanOrEqual(WINDOW);

    up = true;
    await waitFor(() => new Set(accepted).size === EVENTS, { timeoutMs: 40_000, message: 'every waiting delivery delivered by the new owner' });
    const succeeded = await cluster.apiSettled(nodeB, 'GET', '/v1/logs/webhook-deliveries?status=succeeded&limit=250', { key: apiKey });
    expect(succeeded.body.data).toHaveLength(EVENTS);
    // One delivery per event, each sent once more after the takeover: none twice.
    expect(accepted).toHaveLength(EVENTS);
  }, 120_000);
});
