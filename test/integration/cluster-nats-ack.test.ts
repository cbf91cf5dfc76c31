import { jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { partitionFlowControl } from '../../src/cluster/flow-control.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { decodeVerdict, verdictSubjectPrefix } from '../../src/transport/verdict.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode, NATS ingest: a message is acked only once its event is committed and its changelog
 * batch is stored by JetStream, so an event whose ack the producer saw survives a kill -9 of the
 * owner that very moment: the next owner restores it from the changelog and delivers it.
 */

const PARTITIONS = 4;
const LEASE_MS = 2_000;
const EVENTS = 40;

beforeAll(() => ensureBuilt(), 120_000);

describe('NATS ingest in cluster mode', () => {
  it('events acked over NATS survive a kill -9 of their owner right after the ack: the new owner delivers each', async () => {
    let killedAt = Infinity;
    // Nothing succeeds before the kill, so only the new owner can complete a delivery.
    const answered = new Map<string, number>();
    const receiver = await startReceiver({
      respond: (delivery) => {
        if (delivery.receivedAt <= killedAt) return { status: 503 };
        answered.set(delivery.envelope.id, (answered.get(delivery.envelope.id) ?? 0) + 1);
        return { status: 204 };
      },
    });
    const c = await startTestClusterForTest({ partitions: PARTITIONS, leaseMs: LEASE_MS, settings: { HOOKLINE_RETRY_SCHEDULE: '0,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms' }, label: 'nats-ack' });
    const owners = await c.startSettled(['node-a', 'node-b']);
    const victim = c.node('node-a');
    const survivor = c.node('node-b');

    // A project in a partition the victim owns.
    let project: { projectId: string; apiKey: string } | undefined;
    for (let i = 0; !project; i++) {
      const created = await c.createProject(survivor, `nats-ack-${i}`);
      if (owners.get(c.partitionOf(created.projectId)) === victim.nodeId) project = created;
    }
    const configured = await c.apiSettled(survivor, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
    expect(configured.status).toBe(200);
    // Each partition's consumer holds its share of the single-node bound (src/cluster/flow-control.ts).
    const durable = await (await jetstreamManager(c.nats)).consumers.info(c.names.natsStream, `${c.names.natsDurable}-p${c.partitionOf(project.projectId)}`);
    expect(durable.config.max_ack_pending).toBe(partitionFlowControl(PARTITIONS).maxAckPending);

    // The verdict is published right after the ack: the kill follows the last one at once.
    const ids = Array.from({ length: EVENTS }, (_, i) => `evt_acked_${i}`);
    const accepted = new Set<string>();
    const verdicts = c.nats.subscribe(`${verdictSubjectPrefix(c.names.natsSubjectPrefix)}.>`, {
      callback: (_error, message) => {
        const verdict = decodeVerdict(message.data);
        if (verdict?.verdict !== 'accepted' || !ids.includes(verdict.id)) return;
        accepted.add(verdict.id);
        if (accepted.size === EVENTS && killedAt === Infinity) {
          killedAt = Date.now();
          void victim.kill9();
        }
      },
    });
    await c.nats.flush();
    await Promise.all(ids.map((id) => publishEvent(c.nats, project!.projectId, { id, type: 'service.trigger.event', data: { projectId: project!.projectId } }, { subjectPrefix: c.names.natsSubjectPrefix, partitions: PARTITIONS, timeoutMs: 5_000 })));
    await waitFor(() => killedAt < Infinity, { timeoutMs: 15_000, message: 'every event acked by the owner' });
    verdicts.unsubscribe();
    await waitFor(() => !victim.alive, { message: 'the owner gone' });

    await c.waitForOwnership(['node-b'], 15_000);
    const delivered = await waitFor(
      async () => {
        const answer = await c.apiSettled(survivor, 'GET', '/v1/logs/webhook-deliveries?limit=250', { key: project!.apiKey });
        const deliveries = answer.body.data as Array<{ eventId: string; status: string }>;
        return deliveries.length === EVENTS && deliveries.every((delivery) => delivery.status === 'succeeded') ? deliveries : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'every acked event delivered by the new owner' },
    );
    expect(new Set(delivered.map((delivery) => delivery.eventId))).toEqual(new Set(ids));
    for (const id of ids) {
      const receipts = receiver.received.filter((delivery) => delivery.envelope.id === id);
      expect(answered.get(id), `successful receipts of ${id} (after the kill)`).toBeGreaterThanOrEqual(1);
      expect(new Set(receipts.map((delivery) => delivery.webhookId)).size, `webhook-ids of ${id}`).toBe(1);
    }
  }, 90_000);
});
