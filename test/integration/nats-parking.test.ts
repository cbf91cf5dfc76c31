import { RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { HooklineError } from '../../src/errors.js';
import { publishEvent } from '../../src/sdk/nats.js';
import type { EventInput } from '../../src/transport/event-input.js';
import { DEFAULT_MAX_ACK_PENDING, NatsTransport } from '../../src/transport/nats.js';
import { PARKED_MAX_ACK_PENDING, parkedConsumerName } from '../../src/transport/nats-parking.js';
import type { EventSink, IngestResult } from '../../src/transport/types.js';
import { SHARED_NATS_URL, uniqueNatsNames, useSharedJetStream, waitForConsumerDrained } from '../helpers/nats.js';
import type { NatsNames } from '../helpers/nats.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The NATS transport's parks (src/transport/nats-parking.ts) against the shared JetStream, with a
 * sink that refuses one project `overloaded` while it has no room, as the engine does past
 * HOOKLINE_MAX_WAITING_PER_PROJECT.
 */

const jetStream = useSharedJetStream();
const { streams, transports } = jetStream;

/** Takes every project's events but project `a`'s beyond its room, which it refuses `overloaded`. */
class RoomSink implements EventSink {
  /** Event ids taken, in the order taken (a repeat appears again). */
  readonly taken: string[] = [];
  refusals = 0;
  constructor(public room: number) {}

  async ingest(projectId: string, input: EventInput): Promise<IngestResult> {
    if (projectId === 'a') {
      if (this.room <= 0) {
        this.refusals++;
        throw new HooklineError('HOOKLINE_ERR_OVERLOADED', 'project a has no room (test)', { retryAfterSeconds: 5 });
      }
      this.room--;
    }
    this.taken.push(input.id!);
    return { answer: { id: input.id!, deliveryId: null }, duplicate: false };
  }

  async reject(): Promise<void> {}
}

function newNames(): NatsNames {
  const names = uniqueNatsNames();
  streams.add(names.natsStream);
  return names;
}

async function startTransport(sink: EventSink, names: NatsNames, options: Partial<ConstructorParameters<typeof NatsTransport>[0]> = {}): Promise<NatsTransport> {
  const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable, ...options });
  await transport.start(sink);
  transports.push(transport);
  return transport;
}

async function publishMany(names: NatsNames, projectId: string, tag: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, n) => `evt_${tag}_${n}`);
  for (let start = 0; start < count; start += 500) {
    await Promise.all(ids.slice(start, start + 500).map((id) => publishEvent(jetStream.nc, projectId, { id, type: 'service.trigger.event', data: {} }, { subjectPrefix: names.natsSubjectPrefix })));
  }
  return ids;
}

const mainDrained = (names: NatsNames) =>
  waitFor(async () => {
    const info = await jetStream.manager.consumers.info(names.natsStream, names.natsDurable);
    return info.num_pending === 0 && info.num_ack_pending === 0 ? info : null;
  }, { message: 'the main consumer to have acked or set aside every message' });

const parkOf = (names: NatsNames) => jetStream.manager.consumers.info(names.natsStream, parkedConsumerName(names.natsDurable, 'a')).catch(() => null);

describe('parked projects', () => {
  it("sets a refused project's messages aside: the window stays free for the others, and they are taken in stream order once it has room", async () => {
    const sink = new RoomSink(10);
    const names = newNames();
    await startTransport(sink, names);
    const parked = await publishMany(names, 'a', 'a', DEFAULT_MAX_ACK_PENDING + 500);
    const others = await publishMany(names, 'b', 'b', 20);
    await waitFor(() => others.every((id) => sink.taken.includes(id)), { timeoutMs: 5_000, message: "the other project's events" });
    await mainDrained(names);
    const park = await parkOf(names);
    expect(park?.config.filter_subject).toBe(`${names.natsSubjectPrefix}.a`);
    expect(park!.num_ack_pending).toBeLessThanOrEqual(PARKED_MAX_ACK_PENDING);

    sink.room = Infinity;
    await waitFor(() => new Set(sink.taken).size === parked.length + others.length, { timeoutMs: 20_000, intervalMs: 50, message: "every one of a's events" });
    await waitFor(async () => (await parkOf(names)) === null, { message: 'the park deleted once empty' });
    // Its consumer read from the main consumer's ack floor: a message taken before the park was made may come again (the store answers it as a repeat).
    const firstTakes = sink.taken.filter((id, index) => id.startsWith('evt_a_') && sink.taken.indexOf(id) === index);
    expect(firstTakes).toEqual(parked);

    // Unparked: its next events come through the main consumer again, at once.
    const [late] = await publishMany(names, 'a', 'late', 1);
    await waitFor(() => sink.taken.includes(late!), { timeoutMs: 2_000, message: 'an event after the unpark' });
    await waitForConsumerDrained(jetStream.manager, names);
  }, 60_000);

  it('a new transport on the same durable resumes the park an earlier one left, and takes every message set aside', async () => {
    const names = newNames();
    const first = await startTransport(new RoomSink(0), names);
    const parked = await publishMany(names, 'a', 'a', 300);
    await mainDrained(names);
    expect(await parkOf(names)).not.toBeNull();
    await first.stop();

    const sink = new RoomSink(Infinity);
    const lines: string[] = [];
    const log = (_: object, message?: string) => void lines.push(message ?? '');
    await startTransport(sink, names, { logger: { info: log, warn: log, error: log } });
    await waitFor(() => parked.every((id) => sink.taken.includes(id)), { timeoutMs: 10_000, message: 'every message set aside' });
    await waitFor(async () => (await parkOf(names)) === null, { message: 'the park deleted once empty' });
    expect(lines).toContain(`project a: resuming its parked NATS events (consumer ${parkedConsumerName(names.natsDurable, 'a')})`);
    // Logged once the delete's answer is back, which may come after the server has the consumer gone.
    const unparked = 'project a: its parked NATS events are all ingested; its events are consumed with the others again';
    await waitFor(() => lines.includes(unparked), { timeoutMs: 5_000, message: 'the unpark logged' });
  }, 30_000);

  it('backs off a project that stays over its limit: a window of refusals, at growing delays', async () => {
    const sink = new RoomSink(0);
    const names = newNames();
    await startTransport(sink, names);
    await publishMany(names, 'a', 'a', 1_000);
    await mainDrained(names);
    // The first delivery of each and a batch that arrived before the park: then one window per
    // round, at 1, 2, 4, 8 s... (not 1,000 every 5 s).
    const afterPark = sink.refusals;
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(sink.refusals - afterPark).toBeLessThanOrEqual(3 * PARKED_MAX_ACK_PENDING);
    const park = await parkOf(names);
    expect(park!.num_pending + park!.num_ack_pending).toBe(1_000);
  }, 30_000);

  it('without a park (a work-queue stream refuses a second consumer over its subjects), naks the refused messages: nothing acked, all taken later', async () => {
    const names = newNames();
    await jetStream.manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File, retention: RetentionPolicy.Workqueue });
    const sink = new RoomSink(0);
    const warnings: string[] = [];
    const quiet = () => {};
    await startTransport(sink, names, { nakDelayMs: 50, logger: { info: quiet, warn: (_, message) => void warnings.push(message ?? ''), error: quiet } });
    const ids = await publishMany(names, 'a', 'a', 20);
    await waitFor(() => warnings.some((line) => /could not be parked; they are nak'ed meanwhile/.test(line)), { message: 'the warning' });
    expect(await parkOf(names)).toBeNull();
    expect((await jetStream.manager.consumers.info(names.natsStream, names.natsDurable)).num_ack_pending).toBe(20);
    sink.room = Infinity;
    await waitFor(() => ids.every((id) => sink.taken.includes(id)), { timeoutMs: 20_000, message: 'every refused message, redelivered' });
  }, 30_000);
});
