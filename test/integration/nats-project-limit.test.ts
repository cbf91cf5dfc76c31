import { jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { isHooklineError } from '../../src/errors.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { DEFAULT_MAX_ACK_PENDING } from '../../src/transport/nats.js';
import { PARKED_MAX_ACK_PENDING, parkedConsumerName } from '../../src/transport/nats-parking.js';
import { HooklineClient } from '../../src/sdk/index.js';
import { ensureBuilt, startChildNode } from '../helpers/child-node.js';
import { ADMIN_KEY, ALL_TYPES, API_KEY } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import type { NatsNames } from '../helpers/nats.js';
import { useNatsHooklines } from '../helpers/nats-hooklines.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Reply } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * HOOKLINE_MAX_WAITING_PER_PROJECT over NATS (issue 35): one consumer carries every project's
 * events, so a project over its limit must not fill its window with refused messages. Its events
 * wait in the stream for a consumer of its own (src/transport/nats-parking.ts); the other projects'
 * are delivered as ever, and the parked ones once the project has room, each once.
 */

const nats = useNatsHooklines();
let nc: NatsConnection;
let manager: JetStreamManager;

beforeAll(async () => {
  nc = nats.connection();
  manager = await jetstreamManager(nc);
  ensureBuilt();
}, 120_000);

/** More of one project's events than the consumer's window (max_ack_pending) holds. */
const OVER_THE_WINDOW = DEFAULT_MAX_ACK_PENDING + 52;
const LIMIT = 50;

/** Publishes `count` events for `projectId`, `evt_<tag>_<n>`, 500 at a time; resolves once JetStream stored them all. */
async function publishMany(names: NatsNames, projectId: string, tag: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, n) => `evt_${tag}_${n}`);
  for (let start = 0; start < count; start += 500) {
    await Promise.all(ids.slice(start, start + 500).map((id) => publishEvent(nc, projectId, { id, type: 'service.trigger.event', data: { id } }, { subjectPrefix: names.natsSubjectPrefix })));
  }
  return ids;
}

/** The times at which the node refused one of `projectId`'s events `overloaded`, as they happen. */
function overloadedRefusals(hookline: TestHookline, projectId: string): number[] {
  const refusals: number[] = [];
  const engine = hookline.node.engine;
  const ingest = engine.ingest.bind(engine);
  engine.ingest = (project, input) =>
    ingest(project, input).catch((error: unknown) => {
      if (project === projectId && isHooklineError(error) && error.code === 'HOOKLINE_ERR_OVERLOADED') refusals.push(Date.now());
      throw error;
    });
  return refusals;
}

/** A node with project `default` (A) past its limit's reach and a second project (B) on `receiver`. */
async function twoProjects(receiverUrl: string, overrides: Parameters<typeof nats.start>[0] = {}) {
  const { hookline, names } = await nats.start({ maxWaitingPerProject: LIMIT, adminKey: ADMIN_KEY, retrySchedule: [0, 3_600_000], ...overrides });
  const created = await hookline.api('POST', '/admin/v1/projects', { body: { name: 'healthy' }, key: ADMIN_KEY });
  const other = hookline.clientFor(created.body.apiKey);
  await other.configureWebhook({ callbackUrl: receiverUrl, status: 'active', eventTypes: ALL_TYPES });
  return { hookline, names, otherProjectId: created.body.projectId as string };
}

describe('a project over its waiting limit, over NATS', () => {
  it("does not hold up another project's events: with more of its refused than the window holds, the other's are delivered within seconds, and its refusals stay few", async () => {
    const receiver = await startReceiver();
    const { hookline, names, otherProjectId } = await twoProjects(receiver.url);
    const refusals = overloadedRefusals(hookline, 'default');
    // Project A's endpoint refuses connections (nothing listens on port 9).
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/dead', status: 'active', eventTypes: ALL_TYPES });

    await publishMany(names, 'default', 'a', OVER_THE_WINDOW);
    const published = Date.now();
    const ids = await publishMany(names, otherProjectId, 'b', 20);
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size === ids.length, { timeoutMs: 5_000, message: "the other project's 20 events delivered" });
    const waited = Date.now() - published;

    // A's events are not lost: the main consumer set them aside, its own consumer holds them.
    const main = await waitFor(async () => {
      const info = await manager.consumers.info(names.natsStream, names.natsDurable);
      return info.num_pending === 0 && info.num_ack_pending === 0 ? info : null;
    }, { message: 'the main consumer to have acked (or set aside) every message' });
    expect(main.ack_floor.stream_seq).toBe(OVER_THE_WINDOW + ids.length);
    const park = await manager.consumers.info(names.natsStream, parkedConsumerName(names.natsDurable, 'default'));
    expect(park.config.filter_subject).toBe(`${names.natsSubjectPrefix}.default`);
    expect(park.num_pending + park.num_ack_pending).toBeGreaterThanOrEqual(OVER_THE_WINDOW - LIMIT);
    expect(park.num_ack_pending).toBeLessThanOrEqual(PARKED_MAX_ACK_PENDING);
    expect((await hookline.api('GET', '/v1/logs/rejected-events')).body.data).toEqual([]);

    // Its refused events come back a window at a time, at 1, 2, 4... s: over 6 s, at most three
    // windows of them (before, the whole window of 2,048 came back every 5 s).
    const from = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const refusedSince = refusals.filter((at) => at >= from).length;
    expect(refusedSince).toBeLessThanOrEqual(3 * PARKED_MAX_ACK_PENDING);
    console.info(`the other project waited ${waited} ms for its 20 events; A's refusals: ${refusals.length} in all, ${refusedSince} in the 6 s after`);
  }, 60_000);

  it('delivers every one of its parked events once it has room again, each once, then consumes its events with the others again', async () => {
    const receiver = await startReceiver();
    const other = await startReceiver();
    const { hookline, names } = await twoProjects(other.url);
    // A's endpoint is paused: its deliveries wait, and count against its limit, until it is active.
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    receiver.secret = (await hookline.client.getSecret()).secret;
    const ids = await publishMany(names, 'default', 'a', 400);
    const parkName = parkedConsumerName(names.natsDurable, 'default');
    await waitFor(async () => {
      const info = await manager.consumers.info(names.natsStream, names.natsDurable);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    }, { message: 'every message acked or set aside by the main consumer' });
    expect((await manager.consumers.info(names.natsStream, parkName)).config.filter_subject).toBe(`${names.natsSubjectPrefix}.default`);

    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size === ids.length, { timeoutMs: 30_000, intervalMs: 100, message: `all ${ids.length} of A's events delivered` });
    // Unparked once its consumer is empty: deleted, and A's next event comes through the main consumer.
    await waitFor(async () => (await manager.consumers.info(names.natsStream, parkName).catch(() => null)) === null, { timeoutMs: 10_000, message: "A's park consumer deleted" });
    const [late] = await publishMany(names, 'default', 'late', 1);
    await waitFor(() => receiver.received.some((delivery) => delivery.envelope.id === late), { message: 'an event published after the unpark' });

    const byEvent = new Map<string, number>();
    for (const delivery of receiver.received) byEvent.set(delivery.envelope.id, (byEvent.get(delivery.envelope.id) ?? 0) + 1);
    expect([...byEvent.entries()].filter(([, count]) => count !== 1)).toEqual([]);
    expect(byEvent.size).toBe(ids.length + 1);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect((await hookline.api('GET', '/v1/logs/rejected-events')).body.data).toEqual([]);
  }, 60_000);

  it('a kill -9 while its parked events drain loses none of them: the restarted node delivers each, under one delivery id', async () => {
    const names = nats.ownNames();
    const dir = makeTempDir('hookline-park-');
    onTestFinished(() => dir.remove());
    const settings = {
      HOOKLINE_API_KEY: API_KEY,
      HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
      HOOKLINE_NATS_URL: SHARED_NATS_URL,
      HOOKLINE_NATS_STREAM: names.natsStream,
      HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix,
      HOOKLINE_NATS_DURABLE: names.natsDurable,
      HOOKLINE_MAX_WAITING_PER_PROJECT: String(LIMIT),
      HOOKLINE_ENDPOINT_CONCURRENCY: '2',
    };
    // Slow, so that the kill lands with most of the parked events still in the stream.
    const receiver = await startReceiver({
      respond: async (): Promise<Reply> => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        return { status: 204 };
      },
    });
    const first = await startChildNode(dir.path, settings);
    onTestFinished(() => void first.process.kill('SIGKILL'));
    const client = new HooklineClient({ baseUrl: first.url, apiKey: API_KEY });
    await client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    const ids = await publishMany(names, 'default', 'a', 400);
    await first.waitForLog(/is over its waiting limit \(HOOKLINE_MAX_WAITING_PER_PROJECT\): its NATS events wait in stream/);
    await waitFor(async () => {
      const info = await manager.consumers.info(names.natsStream, names.natsDurable);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    }, { message: 'every message acked or set aside by the main consumer' });

    await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    const received = () => new Set(receiver.received.map((delivery) => delivery.envelope.id));
    await waitFor(() => received().size >= 120, { message: 'a third of the events delivered' });
    first.process.kill('SIGKILL');
    await first.exited;
    const atKill = received().size;
    expect(atKill).toBeLessThan(ids.length);

    const second = await startChildNode(dir.path, settings);
    onTestFinished(() => void second.process.kill('SIGKILL'));
    await second.waitForLog(/^project default: resuming its parked NATS events/);
    // Those the killed node held unacked come back after ack_wait (30 s).
    await waitFor(() => received().size === ids.length, { timeoutMs: 60_000, intervalMs: 100, message: `all ${ids.length} events delivered after the restart` });
    await second.waitForLog(/^project default: its parked NATS events are all ingested/, 15_000);
    const deliveryIds = new Map<string, Set<string>>();
    for (const delivery of receiver.received) deliveryIds.set(delivery.envelope.id, (deliveryIds.get(delivery.envelope.id) ?? new Set()).add(delivery.webhookId));
    expect([...deliveryIds.entries()].filter(([, webhookIds]) => webhookIds.size !== 1)).toEqual([]);
    console.info(`kill -9 with ${atKill} of ${ids.length} delivered; all delivered after the restart`);
  }, 120_000);
});
