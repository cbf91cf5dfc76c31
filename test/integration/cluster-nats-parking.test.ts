import { jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { partitionFlowControl } from '../../src/cluster/flow-control.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { parkedConsumerName } from '../../src/transport/nats-parking.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode: a partition's consumer carries every project hashed to it, so a project over
 * HOOKLINE_MAX_WAITING_PER_PROJECT is parked there as on a single node (src/transport/nats-parking.ts),
 * and the partition's next owner resumes its park: the other project of the partition is served
 * throughout, and every parked event is delivered once the project has room.
 */

const PARTITIONS = 4;
const LIMIT = 20;

beforeAll(() => ensureBuilt(), 120_000);

describe('a project over its waiting limit, in cluster mode', () => {
  it("does not hold up its partition's other project, and its park moves with the partition", async () => {
    const receiver = await startReceiver();
    const c = await startTestClusterForTest({ partitions: PARTITIONS, leaseMs: 2_000, settings: { HOOKLINE_MAX_WAITING_PER_PROJECT: String(LIMIT) }, label: 'nats-parking' });
    const owners = await c.startSettled(['node-a', 'node-b']);
    const victim = c.node('node-a');
    const survivor = c.node('node-b');

    // Two projects of one partition that the victim owns.
    const byPartition = new Map<number, Array<{ projectId: string; apiKey: string }>>();
    let pair: Array<{ projectId: string; apiKey: string }> | undefined;
    for (let i = 0; !pair; i++) {
      const created = await c.createProject(survivor, `parking-${i}`);
      const partition = c.partitionOf(created.projectId);
      if (owners.get(partition) !== victim.nodeId) continue;
      const projects = [...(byPartition.get(partition) ?? []), created];
      byPartition.set(partition, projects);
      if (projects.length === 2) pair = projects;
    }
    const [full, other] = pair;
    // The full project's endpoint is paused: its deliveries wait, and count against its limit.
    for (const [project, status] of [[full!, 'paused'], [other!, 'active']] as const) {
      const configured = await c.apiSettled(survivor, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status, eventTypes: ALL_TYPES } });
      expect(configured.status).toBe(200);
    }
    const publish = (projectId: string, tag: string, count: number) => {
      const ids = Array.from({ length: count }, (_, n) => `evt_${tag}_${n}`);
      return Promise.all(ids.map((id) => publishEvent(c.nats, projectId, { id, type: 'service.trigger.event', data: {} }, { subjectPrefix: c.names.natsSubjectPrefix, partitions: PARTITIONS, timeoutMs: 5_000 }))).then(() => ids);
    };
    const delivered = (ids: string[]) => ids.every((id) => receiver.received.some((delivery) => delivery.envelope.id === id));

    // More of the full project's events than its partition consumer's window.
    const parked = await publish(full!.projectId, 'full', partitionFlowControl(PARTITIONS).maxAckPending + 100);
    const before = await publish(other!.projectId, 'before', 20);
    await waitFor(() => delivered(before), { timeoutMs: 10_000, message: "the other project's events, with the full one's parked" });
    const manager = await jetstreamManager(c.nats);
    const park = parkedConsumerName(`${c.names.natsDurable}-p${c.partitionOf(full!.projectId)}`, full!.projectId);
    expect((await manager.consumers.info(c.names.natsStream, park)).config.filter_subject).toBe(`${c.names.natsSubjectPrefix}.${c.partitionOf(full!.projectId)}.${full!.projectId}`);

    await victim.kill9();
    await c.waitForOwnership(['node-b'], 15_000);
    await waitFor(() => survivor.logs(/^project .*: resuming its parked NATS events/).length > 0, { message: 'the new owner to resume the park' });
    const after = await publish(other!.projectId, 'after', 20);
    await waitFor(() => delivered(after), { timeoutMs: 10_000, message: "the other project's events on the new owner" });

    const activated = await c.apiSettled(survivor, 'PUT', '/v1/webhook', { key: full!.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
    expect(activated.status).toBe(200);
    // Those the victim held unacked come back after ack_wait (30 s).
    await waitFor(() => delivered(parked), { timeoutMs: 60_000, intervalMs: 200, message: "every one of the full project's events" });
    const webhookIds = new Map<string, Set<string>>();
    for (const delivery of receiver.received) webhookIds.set(delivery.envelope.id, (webhookIds.get(delivery.envelope.id) ?? new Set()).add(delivery.webhookId));
    expect([...webhookIds.entries()].filter(([, ids]) => ids.size !== 1)).toEqual([]);
    await waitFor(async () => (await manager.consumers.info(c.names.natsStream, park).catch(() => null)) === null, { timeoutMs: 15_000, message: 'the park deleted once empty' });
  }, 150_000);
});
