import { AckPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { HooklineError } from '../../src/errors.js';
import { publishEvent } from '../../src/sdk/nats.js';
import type { EventInput } from '../../src/transport/event-input.js';
import { MAX_MESSAGES_PER_TURN, NatsTransport } from '../../src/transport/nats.js';
import type { EventSink, IngestResult, Rejection } from '../../src/transport/types.js';
import { decodeVerdict, verdictSubjectPrefix } from '../../src/transport/verdict.js';
import type { EventVerdict } from '../../src/transport/verdict.js';
import { SHARED_NATS_URL, uniqueNatsNames, useSharedJetStream, waitForConsumerDrained } from '../helpers/nats.js';
import type { NatsNames } from '../helpers/nats.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * NatsTransport on its own, against the shared JetStream, with a scripted EventSink in place of the
 * engine: the ack / nak / term mapping and flow control, which the whole-node tests cannot steer.
 */

const jetStream = useSharedJetStream();
const { streams, transports } = jetStream;

/** A sink that records every call and answers as `ingest` says (default: accepted at once). */
class ScriptedSink implements EventSink {
  readonly ingested: Array<{ projectId: string; input: EventInput }> = [];
  readonly rejected: Rejection[] = [];
  rejectCalls = 0;
  inflight = 0;
  maxInflight = 0;
  constructor(
    private readonly onIngest: (input: EventInput, attempt: number) => Promise<void> | void = () => {},
    private readonly onReject: (rejection: Rejection, attempt: number) => Promise<void> | void = () => {},
  ) {}

  async ingest(projectId: string, input: EventInput): Promise<IngestResult> {
    const attempt = this.ingested.filter((entry) => entry.input.id === input.id).length + 1;
    this.ingested.push({ projectId, input });
    this.maxInflight = Math.max(this.maxInflight, ++this.inflight);
    try {
      await this.onIngest(input, attempt);
    } finally {
      this.inflight--;
    }
    return { answer: { id: input.id!, deliveryId: null }, duplicate: false };
  }

  async reject(rejection: Rejection): Promise<void> {
    await this.onReject(rejection, ++this.rejectCalls);
    this.rejected.push(rejection);
  }
}

async function startTransport(sink: EventSink, options: Partial<ConstructorParameters<typeof NatsTransport>[0]> = {}): Promise<{ transport: NatsTransport; names: NatsNames }> {
  const names = uniqueNatsNames();
  streams.add(names.natsStream);
  const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable, nakDelayMs: 50, ...options });
  await transport.start(sink);
  transports.push(transport);
  return { transport, names };
}

const publish = (names: NatsNames, id: string, projectId = 'default') => publishEvent(jetStream.nc, projectId, { id, type: 'service.trigger.event', data: { id } }, { subjectPrefix: names.natsSubjectPrefix });

describe('NatsTransport ack / nak / term', () => {
  it('naks a transient ingest failure with a delay and acks the redelivery once it is stored', async () => {
    const sink = new ScriptedSink((input, attempt) => {
      if (input.id === 'evt_flaky' && attempt < 3) throw new HooklineError('HOOKLINE_ERR_STORAGE', 'disk full (test)');
    });
    const { names } = await startTransport(sink);
    await publish(names, 'evt_flaky');
    await publish(names, 'evt_steady');

    const consumer = await waitForConsumerDrained(jetStream.manager, names);
    expect(sink.ingested.filter((entry) => entry.input.id === 'evt_flaky')).toHaveLength(3);
    expect(sink.ingested.filter((entry) => entry.input.id === 'evt_steady')).toHaveLength(1);
    expect(consumer.num_redelivered).toBe(0); // once acked, nothing is left awaiting redelivery
    expect(sink.rejected).toEqual([]);
  });

  it('records then terminates a permanent ingest failure (event id conflict) with its code as reason', async () => {
    const sink = new ScriptedSink((input) => {
      if (input.id === 'evt_clash') throw new HooklineError('HOOKLINE_ERR_EVENT_ID_CONFLICT', 'event evt_clash was already used with a different body');
    });
    const { names } = await startTransport(sink);
    await publish(names, 'evt_clash');
    await waitForConsumerDrained(jetStream.manager, names);
    expect(sink.ingested).toHaveLength(1);
    expect(sink.rejected).toEqual([expect.objectContaining({ projectId: 'default', reason: 'event_id_conflict', source: `nats:${names.natsSubjectPrefix}.default#1` })]);
  });

  it('rejects a body id that differs from Nats-Msg-Id, and naks (not drops) a message whose rejection could not be recorded', async () => {
    const sink = new ScriptedSink(undefined, (_rejection, attempt) => {
      if (attempt === 1) throw new HooklineError('HOOKLINE_ERR_STORAGE', 'disk full (test)');
    });
    const { names } = await startTransport(sink);
    await jetstream(jetStream.nc).publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ id: 'evt_body', type: 'service.trigger.event', data: {} }), { msgID: 'evt_header' });

    await waitForConsumerDrained(jetStream.manager, names);
    expect(sink.ingested).toEqual([]);
    expect(sink.rejectCalls).toBe(2);
    expect(sink.rejected).toEqual([expect.objectContaining({ reason: 'validation_failed', details: [{ path: 'id', message: 'must equal Nats-Msg-Id' }] })]);
  });

  it('words a validation rejection as HTTP does, without an empty path in front of a problem with the whole body', async () => {
    const sink = new ScriptedSink();
    const { names } = await startTransport(sink);
    const js = jetstream(jetStream.nc);
    await js.publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ type: 'service.trigger.event', data: {}, payload: {} }), { msgID: 'evt_extra' });
    await js.publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ type: 'service.trigger.event' }), { msgID: 'evt_nodata' });
    await waitForConsumerDrained(jetStream.manager, names);
    const byId = Object.fromEntries(sink.rejected.map((rejection) => [rejection.source.split('#')[1], rejection]));
    expect(byId['1']).toMatchObject({ reason: 'validation_failed', message: 'unknown key "payload": an event may hold only id, type, data, metadata, timestamp' });
    expect(byId['2']).toMatchObject({ reason: 'validation_failed', message: 'data: required, an object', details: [{ path: 'data', message: 'required, an object' }] });
  });

  it('logs at start the servers, the stream, its subjects and the durable consumer, and warns about a URL scheme NATS does not speak', async () => {
    const lines: Array<{ level: string; object: Record<string, unknown>; message: string | undefined }> = [];
    const keep = (level: string) => (object: object, message?: string) => void lines.push({ level, object: object as Record<string, unknown>, message });
    const logger = { info: keep('info'), warn: keep('warn'), error: keep('error') };
    const url = new URL(SHARED_NATS_URL);
    const { names } = await startTransport(new ScriptedSink(), { logger, servers: `http://${url.host}` });
    const servers = `http://${url.host}`;
    expect(lines.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual([
      `HOOKLINE_NATS_URL: ${servers} has the scheme http://, which NATS does not speak; it is dialled as nats:// (plain TCP) all the same. Write nats://host:4222, or tls://host:4222 for TLS`,
    ]);
    const started = lines.find((line) => line.level === 'info' && line.message?.startsWith('NATS JetStream: consuming'));
    expect(started).toEqual({
      level: 'info',
      object: { servers, stream: names.natsStream, subjects: `${names.natsSubjectPrefix}.>`, durable: names.natsDurable },
      message: `NATS JetStream: consuming ${names.natsSubjectPrefix}.> from stream ${names.natsStream} with durable consumer ${names.natsDurable}, servers ${servers}`,
    });
  });

  it('takes the event id from Nats-Msg-Id when the body has none', async () => {
    const sink = new ScriptedSink();
    const { names } = await startTransport(sink);
    await jetstream(jetStream.nc).publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ type: 'service.trigger.disabled', data: { x: 1 } }), { msgID: 'evt_from_header' });
    await waitForConsumerDrained(jetStream.manager, names);
    expect(sink.ingested).toEqual([{ projectId: 'default', input: { id: 'evt_from_header', type: 'service.trigger.disabled', data: { x: 1 } } }]);
  });

  it('without body id or Nats-Msg-Id, derives the id from the stream sequence and store time (stable across redeliveries)', async () => {
    const sink = new ScriptedSink((_input, attempt) => {
      if (attempt === 1) throw new HooklineError('HOOKLINE_ERR_STORAGE', 'disk full (test)');
    });
    const { names } = await startTransport(sink);
    await jetstream(jetStream.nc).publish(`${names.natsSubjectPrefix}.default`, JSON.stringify({ type: 'service.trigger.event', data: {} }));
    await waitForConsumerDrained(jetStream.manager, names);
    expect(sink.ingested).toHaveLength(2);
    expect(sink.ingested[0]!.input.id).toMatch(/^evt_js1_\d+$/);
    expect(sink.ingested[1]!.input.id).toBe(sink.ingested[0]!.input.id);
  });
});

describe('NatsTransport batches', () => {
  it('takes a pull of good and bad messages as one batch and gives each its own ack, term or nak, and verdict', async () => {
    // Which turn of the event loop each first ingest started in: one batch is one turn.
    let turn = 0;
    let turnOpen = false;
    const firstAttemptTurns = new Set<number>();
    const sink = new ScriptedSink((input, attempt) => {
      if (!turnOpen) {
        turnOpen = true;
        turn++;
        setImmediate(() => (turnOpen = false));
      }
      if (attempt === 1) firstAttemptTurns.add(turn);
      if (input.id === 'evt_clash') throw new HooklineError('HOOKLINE_ERR_EVENT_ID_CONFLICT', 'event evt_clash was already used with a different body');
      if (input.id === 'evt_flaky' && attempt === 1) throw new HooklineError('HOOKLINE_ERR_STORAGE', 'disk full (test)');
    });
    // Everything is in the stream before the transport starts, so its first pull brings it all.
    const names = uniqueNatsNames();
    streams.add(names.natsStream);
    await jetStream.manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File });
    const verdicts = new Map<string, EventVerdict>();
    const subscription = jetStream.nc.subscribe(`${verdictSubjectPrefix(names.natsSubjectPrefix)}.>`, {
      callback: (_error, message) => {
        const verdict = decodeVerdict(message.data);
        if (verdict) verdicts.set(verdict.id, verdict);
      },
    });
    await jetStream.nc.flush();
    const js = jetstream(jetStream.nc);
    const subject = `${names.natsSubjectPrefix}.default`;
    const good = ['evt_ok_1', 'evt_ok_2', 'evt_ok_3', 'evt_ok_4', 'evt_ok_5'];
    for (const id of good.slice(0, 3)) await publish(names, id);
    await js.publish(subject, '{not json', { msgID: 'evt_badjson' });
    await js.publish(subject, JSON.stringify({ id: 'evt_notype', data: {} }));
    await publish(names, 'evt_clash');
    await publish(names, 'evt_flaky');
    await js.publish(subject, JSON.stringify({ id: 'evt_body', type: 'service.trigger.event', data: {} }), { msgID: 'evt_header' });
    for (const id of good.slice(3)) await publish(names, id);

    const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable, nakDelayMs: 50 });
    transports.push(transport);
    await transport.start(sink);
    const consumer = await waitForConsumerDrained(jetStream.manager, names);
    await waitFor(() => verdicts.size === 10, { message: 'a verdict for every message' });
    subscription.unsubscribe();

    expect(consumer.ack_floor.stream_seq).toBe(10);
    // At most two turns: the pull's messages can reach the client in two reads of its socket.
    expect(firstAttemptTurns.size).toBeLessThanOrEqual(2);
    expect(sink.ingested.map((entry) => entry.input.id)).toEqual([...good.slice(0, 3), 'evt_clash', 'evt_flaky', ...good.slice(3), 'evt_flaky']);
    expect(Object.fromEntries(sink.rejected.map((rejection) => [rejection.source.split('#')[1], rejection.reason]))).toEqual({ '4': 'invalid_json', '5': 'validation_failed', '6': 'event_id_conflict', '8': 'validation_failed' });
    for (const id of [...good, 'evt_flaky']) expect(verdicts.get(id)).toEqual({ verdict: 'accepted', id, projectId: 'default', deliveryId: null, duplicate: false });
    expect(verdicts.get('evt_badjson')).toMatchObject({ verdict: 'rejected', reason: 'invalid_json' });
    expect(verdicts.get('evt_notype')).toMatchObject({ verdict: 'rejected', reason: 'validation_failed' });
    expect(verdicts.get('evt_clash')).toMatchObject({ verdict: 'rejected', reason: 'event_id_conflict' });
    expect(verdicts.get('evt_header')).toMatchObject({ verdict: 'rejected', reason: 'validation_failed' });
  });
});

describe('NatsTransport flow control', () => {
  it('holds at most max_ack_pending messages in flight during a burst of thousands, then catches up', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const sink = new ScriptedSink(() => released);
    const maxAckPending = 2048; // NatsTransport's default
    const { names } = await startTransport(sink);
    const consumerConfig = (await jetStream.manager.consumers.info(names.natsStream, names.natsDurable)).config;
    expect(consumerConfig.max_ack_pending).toBe(maxAckPending);

    const total = 5_000;
    const js = jetstream(jetStream.nc);
    const subject = `${names.natsSubjectPrefix}.default`;
    for (let start = 0; start < total; start += 500) {
      await Promise.all(Array.from({ length: Math.min(500, total - start) }, (_, i) => js.publish(subject, JSON.stringify({ id: `evt_burst_${start + i}`, type: 'service.trigger.event', data: {} }))));
    }

    // The engine is stalled: the server stops at max_ack_pending and the transport holds no more.
    await waitFor(() => sink.inflight === maxAckPending, { timeoutMs: 10_000, message: `${maxAckPending} ingests in flight` });
    const stalled = await waitFor(
      async () => {
        const info = await jetStream.manager.consumers.info(names.natsStream, names.natsDurable);
        return info.num_ack_pending === maxAckPending && info.num_pending === total - maxAckPending ? info : null;
      },
      { message: 'the server to hold back the rest' },
    );
    expect(stalled.delivered.stream_seq).toBe(maxAckPending);
    expect(sink.maxInflight).toBe(maxAckPending);

    release();
    const drained = await waitForConsumerDrained(jetStream.manager, names, 15_000);
    expect(drained.ack_floor.stream_seq).toBe(total);
    expect(sink.ingested).toHaveLength(total);
    expect(sink.maxInflight).toBeLessThanOrEqual(maxAckPending);
  });

  it('sets an existing durable consumer to its max_ack_pending and holds no more than that', async () => {
    // A durable made by an earlier version with the single-node bound (a cluster node's partition
    // consumers are given fewer now), then a transport started on it with 64.
    const names = uniqueNatsNames();
    streams.add(names.natsStream);
    await jetStream.manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File });
    await jetStream.manager.consumers.add(names.natsStream, { durable_name: names.natsDurable, ack_policy: AckPolicy.Explicit, filter_subject: `${names.natsSubjectPrefix}.>`, max_ack_pending: 2048 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const sink = new ScriptedSink(() => released);
    const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable, maxAckPending: 64, batch: 64 });
    await transport.start(sink);
    transports.push(transport);
    expect((await jetStream.manager.consumers.info(names.natsStream, names.natsDurable)).config.max_ack_pending).toBe(64);

    const total = 300;
    await Promise.all(Array.from({ length: total }, (_, i) => publish(names, `evt_bound_${i}`)));
    await waitFor(() => sink.inflight === 64, { timeoutMs: 10_000, message: '64 ingests in flight' });
    const stalled = await waitFor(async () => {
      const info = await jetStream.manager.consumers.info(names.natsStream, names.natsDurable);
      return info.num_ack_pending === 64 && info.num_pending === total - 64 ? info : null;
    }, { message: 'the server to hold back the rest' });
    expect(stalled.delivered.stream_seq).toBe(64);
    expect(sink.maxInflight).toBe(64);

    release();
    const drained = await waitForConsumerDrained(jetStream.manager, names, 15_000);
    expect(drained.ack_floor.stream_seq).toBe(total);
    expect(sink.maxInflight).toBe(64);
  });

  it('leaves an existing durable consumer its own max_ack_pending when none is given (the single-node consumer)', async () => {
    const names = uniqueNatsNames();
    streams.add(names.natsStream);
    await jetStream.manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File });
    await jetStream.manager.consumers.add(names.natsStream, { durable_name: names.natsDurable, ack_policy: AckPolicy.Explicit, filter_subject: `${names.natsSubjectPrefix}.>`, max_ack_pending: 100 });
    const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable });
    await transport.start(new ScriptedSink());
    transports.push(transport);
    expect((await jetStream.manager.consumers.info(names.natsStream, names.natsDurable)).config.max_ack_pending).toBe(100);
  });

  /** The most messages the transport handed to its sink in one turn of the event loop, draining a backlog of 2,000. */
  async function mostHandedInOneTurn(options: { messagesPerTurn?: number }): Promise<number> {
    // Ingests started in each turn of the event loop (counted by an immediate that runs once a turn):
    // the delivery side's I/O is read only between turns.
    const perTurn = new Map<number, number>();
    let turn = 0;
    let counting = true;
    const tick = () => {
      turn++;
      if (counting) setImmediate(tick);
    };
    tick();
    const sink = new ScriptedSink(() => void perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1));
    // The backlog is in the stream before the transport starts: its pulls bring hundreds of small messages per socket read.
    const names = uniqueNatsNames();
    streams.add(names.natsStream);
    await jetStream.manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File });
    const total = 2_000;
    const js = jetstream(jetStream.nc);
    const subject = `${names.natsSubjectPrefix}.default`;
    for (let start = 0; start < total; start += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, i) => js.publish(subject, `{"id":"evt_backlog_${start + i}","type":"service.trigger.event","data":{}}`)));
    }
    const transport = new NatsTransport({ servers: SHARED_NATS_URL, stream: names.natsStream, subjectPrefix: names.natsSubjectPrefix, durable: names.natsDurable, batch: 1_000, ...options });
    transports.push(transport);
    await transport.start(sink);

    const drained = await waitForConsumerDrained(jetStream.manager, names, 15_000);
    expect(drained.ack_floor.stream_seq).toBe(total);
    expect(sink.ingested).toHaveLength(total);
    counting = false;
    return Math.max(...perTurn.values());
  }

  it('hands a backlog to the sink at most MAX_MESSAGES_PER_TURN messages per turn of the event loop', async () => {
    expect(await mostHandedInOneTurn({})).toBe(MAX_MESSAGES_PER_TURN);
  });

  it('hands at most its messagesPerTurn (a cluster partition\'s share) per turn', async () => {
    expect(await mostHandedInOneTurn({ messagesPerTurn: 40 })).toBe(40);
  });

  it('stop() resolves only after the messages being ingested are settled', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const sink = new ScriptedSink(() => released);
    const { transport, names } = await startTransport(sink);
    await publish(names, 'evt_slow');
    await waitFor(() => sink.inflight === 1, { message: 'the ingest to start' });

    let stopped = false;
    const stopping = transport.stop().then(() => (stopped = true));
    await waitFor(() => sink.ingested.length === 1, { message: 'the ingest to be under way' });
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(sink.inflight).toBe(0);
    const info = await jetStream.manager.consumers.info(names.natsStream, names.natsDurable);
    expect(info.ack_floor.stream_seq).toBe(1);
  });
});
