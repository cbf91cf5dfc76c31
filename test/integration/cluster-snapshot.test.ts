import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { desiredPartitions } from '../../src/cluster/rendezvous.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Changelog snapshots in a running cluster: a node writes a partition's snapshot once its batches
 * since the last hold `HOOKLINE_CHANGELOG_SNAPSHOT_EVERY` entries, but not while a live node of an
 * earlier version would not read it; and a node that takes the partition over after a kill -9
 * restores every event and delivery from the snapshot and the batches after it.
 */

beforeAll(() => ensureBuilt(), 120_000);

describe('changelog snapshots', () => {
  it('a node takes over a snapshotted partition after a kill -9 with every event and delivery', async () => {
    const receiver = await startReceiver();
    const cluster = await startTestCluster({ partitions: 2, label: 'snapshot', settings: { HOOKLINE_CHANGELOG_SNAPSHOT_EVERY: '40' } });
    onTestFinished(() => cluster.dispose());
    await cluster.startSettled(['node-a']);
    const nodeA = cluster.node('node-a');
    // A live node of a version before snapshots (its heartbeat has no `readsSnapshots`), named so
    // that node-a still wins both partitions: nothing moves, but no snapshot may be written.
    const older = Array.from({ length: 64 }, (_, i) => `node-old-${i}`).find((id) => desiredPartitions('node-a', ['node-a', id], 2).size === 2)!;
    const membership = await new Kvm(cluster.nats).open(`${cluster.names.natsStream}_leases`);
    await membership.put(`node.${older}`, new TextEncoder().encode(JSON.stringify({ nodeId: older, heartbeatAt: Date.now() + 600_000 })));
    const { projectId, apiKey } = await cluster.createProject(nodeA, 'snapshotted');
    expect((await cluster.apiSettled(nodeA, 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } })).status).toBe(200);

    const ids = Array.from({ length: 150 }, (_, i) => `evt_snap_${String(i).padStart(3, '0')}`);
    for (let from = 0; from < ids.length; from += 50) {
      const events = ids.slice(from, from + 50).map((id) => ({ id, type: 'service.trigger.event', data: { projectId } }));
      const answer = await cluster.apiSettled(nodeA, 'POST', '/v1/events/batch', { key: apiKey, body: { events } });
      expect(answer.status).toBe(202);
    }
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size === ids.length, { timeoutMs: 30_000, message: "every event delivered" });
    const partition = cluster.partitionOf(projectId);
    const snapshotsOf = () => nodeA.logs(/^partition changelog snapshot written$/).filter((line) => line.partition === partition);
    await waitFor(() => nodeA.logs(/^partition changelog snapshots held back/).length > 0, { timeoutMs: 20_000, message: 'snapshots held back' });
    expect(snapshotsOf()).toEqual([]);
    await membership.delete(`node.${older}`);
    await waitFor(() => snapshotsOf().length > 0, { timeoutMs: 20_000, message: 'a snapshot of the partition' });
    expect(snapshotsOf()[0]).toMatchObject({ leftOut: 0 });
    expect(snapshotsOf()[0]!.records).toBeGreaterThan(40);

    const manager = await jetstreamManager(cluster.nats);
    const prefix = `${cluster.names.clusterSubjectPrefix}.changelog.${partition}`;
    const subjects = (await manager.streams.info(`${cluster.names.natsStream}_CHANGELOG`, { subjects_filter: `${prefix}.>` })).state.subjects ?? {};
    expect(subjects[`${prefix}.snapped`]).toBeGreaterThan(0);

    const before = await cluster.apiSettled(nodeA, 'GET', '/v1/logs/webhook-deliveries?limit=250', { key: apiKey });
    await nodeA.kill9();
    await cluster.startSettled(['node-b'], 30_000);
    const nodeB = cluster.node('node-b');
    const after = await cluster.apiSettled(nodeB, 'GET', '/v1/logs/webhook-deliveries?limit=250', { key: apiKey });
    expect(after.status).toBe(200);
    expect(after.body.data).toHaveLength(ids.length);
    expect(after.body.data.map((delivery: { id: string; status: string }) => [delivery.id, delivery.status])).toEqual(before.body.data.map((delivery: { id: string; status: string }) => [delivery.id, delivery.status]));
    expect(after.body.data.every((delivery: { status: string }) => delivery.status === 'succeeded')).toBe(true);
    const event = await cluster.apiSettled(nodeB, 'GET', `/v1/events/${ids[0]}`, { key: apiKey });
    expect(event.status).toBe(200);
    // Nothing was sent again by the new owner.
    expect(receiver.received).toHaveLength(ids.length);
  }, 120_000);

  it('a SIGTERM of an owner writing snapshots of a long changelog exits promptly, and the next owner restores every delivery', async () => {
    const EVENTS = 3_000;
    const cluster = await startTestCluster({
      partitions: 2,
      label: 'snapshot-term',
      // Every delivery fails its first attempt (nothing listens) and waits 6 h: the partition only grows.
      settings: { HOOKLINE_CHANGELOG_SNAPSHOT_EVERY: '200', HOOKLINE_RETRY_SCHEDULE: '0,6h,6h' },
    });
    onTestFinished(() => cluster.dispose());
    await cluster.startSettled(['node-a']);
    const nodeA = cluster.node('node-a');
    const { projectId, apiKey } = await cluster.createProject(nodeA, 'snapshot-term');
    expect((await cluster.apiSettled(nodeA, 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl: 'http://127.0.0.1:9/dead', status: 'active', eventTypes: ALL_TYPES } })).status).toBe(200);
    const partition = cluster.partitionOf(projectId);
    const snapshotsOf = () => nodeA.logs(/^partition changelog snapshot written$/).filter((line) => line.partition === partition);
    for (let from = 0; from < EVENTS; from += 500) {
      const events = Array.from({ length: 500 }, (_, i) => ({ id: `evt_term_${from + i}`, type: 'service.trigger.event', data: { n: from + i } }));
      expect((await cluster.apiSettled(nodeA, 'POST', '/v1/events/batch', { key: apiKey, body: { events } })).status).toBe(202);
      // The first snapshot, then the rest of the fill: the next is due as the fill ends.
      if (from === 0) await waitFor(() => snapshotsOf().length > 0, { timeoutMs: 20_000, message: 'a snapshot of the partition' });
    }
    const waiting = new RegExp(`^hookline_waiting_deliveries(\\{[^}]*\\})? ${EVENTS}$`, 'm');
    await waitFor(async () => waiting.test((await cluster.api(nodeA, 'GET', '/metrics')).body), { timeoutMs: 30_000, message: 'every delivery waiting on node-a' });

    // Whether a snapshot is being written now or not, the stop waits for none to finish.
    const stoppedAt = Date.now();
    nodeA.child.process.kill('SIGTERM');
    await nodeA.child.exited;
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);

    await cluster.startSettled(['node-b'], 30_000);
    const nodeB = cluster.node('node-b');
    await waitFor(async () => waiting.test((await cluster.api(nodeB, 'GET', '/metrics')).body), { timeoutMs: 30_000, message: 'every delivery waiting on node-b' });
  }, 180_000);
});
