import { AckPolicy, DeliverPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../actors/project-actor.js';
import { HooklineError, isHooklineError } from '../errors.js';
import { eventInputSchema } from './event-input.js';
import type { EventSink, InboundTransport, Rejection } from './types.js';

export interface NatsTransportOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** JetStream stream holding inbound events. @default "HOOKLINE_EVENTS" */
  stream?: string;
  /** Events for project P are published on `<subjectPrefix>.P`. @default "hookline.events" */
  subjectPrefix?: string;
  /** Durable pull consumer name, shared by every node that consumes the stream. @default "hookline" */
  durable?: string;
  /** Messages pulled per request, and the size of the local buffer. @default 256 */
  batch?: number;
  /** Unacknowledged messages the server lets this consumer hold at most (flow control). @default 2048 */
  maxAckPending?: number;
  /** Redelivery delay after a transient failure (storage full, draining). @default 1000 */
  nakDelayMs?: number;
  /**
   * Subjects of the stream when this transport has to create it; a cluster node consuming one
   * partition (`<prefix>.<partition>`) creates the stream for every partition.
   * @default [`<subjectPrefix>.>`]
   */
  streamSubjects?: string[];
  /** Window in which JetStream drops a repeated `Nats-Msg-Id`. @default 120000 */
  duplicateWindowMs?: number;
  /** Where consumer interruptions and recoveries are reported. @default none */
  logger?: Pick<Logger, 'info' | 'warn'>;
}

/** Bytes of a rejected payload kept for diagnosis. */
const REJECTED_PAYLOAD_BYTES = 1024;
const textDecoder = new TextDecoder();

/**
 * Inbound events from NATS JetStream, at least once. A message is acked only after its event (and
 * delivery) is committed to LMDB; one that can never be accepted (bad JSON, failed validation, an
 * unknown project, an id reused with another body) is recorded in the rejected-events log and then
 * terminated; a transient failure is nak'ed with a delay so JetStream redelivers it. Redeliveries are
 * harmless: the event id (body `id`, else `Nats-Msg-Id`, else one derived from the stream sequence
 * and store time) de-duplicates them.
 */
export class NatsTransport implements InboundTransport {
  readonly name = 'nats';
  readonly stream: string;
  readonly subjectPrefix: string;
  readonly durable: string;
  private connection: NatsConnection | null = null;
  private messages: ConsumerMessages | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: () => void = () => {};
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly options: NatsTransportOptions) {
    this.stream = options.stream ?? 'HOOKLINE_EVENTS';
    this.subjectPrefix = options.subjectPrefix ?? 'hookline.events';
    this.durable = options.durable ?? 'hookline';
  }

  async start(sink: EventSink): Promise<void> {
    let messages: ConsumerMessages;
    try {
      this.connection = await connect({ servers: this.options.servers, name: 'hookline', reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      messages = await this.consume(this.connection);
    } catch (error) {
      await this.connection?.close().catch(() => {});
      throw new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', `could not consume JetStream stream ${this.stream} at ${String(this.options.servers)}: ${(error as Error).message}; start NATS with -js or unset HOOKLINE_NATS_URL`, { cause: error });
    }
    this.loop = this.consumeLoop(sink, this.connection, messages);
  }

  /**
   * Flow control: the client pulls `batch` messages at a time and asks for more as they arrive, so
   * the bound on work in flight is the server's: it sends no more than `max_ack_pending` unacked
   * messages. Every message handed to `handle` stays unacked until its LMDB commit, hence at most
   * `max_ack_pending` ingests (and their promises) are in flight, however deep the stream is
   * (test/integration/nats-transport.test.ts bursts 5,000 messages at a stalled sink: 2,048 held).
   * `abort_on_missing_resource` makes the iterator end, instead of polling for 15-45 s at a time,
   * when the stream or consumer is gone (NATS restarted without its store, stream deleted):
   * `consumeLoop` then creates them again.
   */
  private async consume(connection: NatsConnection): Promise<ConsumerMessages> {
    await this.ensureStreamAndConsumer(connection);
    const consumer = await jetstream(connection).consumers.get(this.stream, this.durable);
    this.messages = await consumer.consume({ max_messages: this.options.batch ?? 256, abort_on_missing_resource: true });
    return this.messages;
  }

  /** Hands every message to `handle` and, until `stop()`, consumes again whenever the iterator ends. */
  private async consumeLoop(sink: EventSink, connection: NatsConnection, first: ConsumerMessages): Promise<void> {
    let messages: ConsumerMessages | null = first;
    let failures = 0;
    while (!this.stopping) {
      if (!messages) {
        try {
          messages = await this.consume(connection);
        } catch (error) {
          if (this.stopping || connection.isClosed()) return;
          this.options.logger?.warn({ err: error, stream: this.stream, durable: this.durable }, 'JetStream consumer unavailable; retrying');
          await this.pause(Math.min(250 * 2 ** failures++, 5_000));
          continue;
        }
        if (this.stopping) {
          messages.stop();
          return;
        }
        failures = 0;
        this.options.logger?.info({ stream: this.stream, durable: this.durable }, 'JetStream consumer resumed');
      }
      try {
        for await (const message of messages) {
          const handled = this.handle(sink, message).finally(() => this.inflight.delete(handled));
          this.inflight.add(handled);
        }
      } catch (error) {
        if (!this.stopping) this.options.logger?.warn({ err: error, stream: this.stream, durable: this.durable }, 'JetStream consumer stopped; consuming again');
      }
      messages = null;
      if (connection.isClosed()) return;
      await this.pause(250);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async ensureStreamAndConsumer(connection: NatsConnection): Promise<void> {
    const manager = await jetstreamManager(connection);
    const filter = `${this.subjectPrefix}.>`;
    const subjects = this.options.streamSubjects ?? [filter];
    try {
      await manager.streams.info(this.stream);
    } catch {
      await manager.streams.add({ name: this.stream, subjects, storage: StorageType.File, duplicate_window: nanos(this.options.duplicateWindowMs ?? 120_000) });
    }
    try {
      await manager.consumers.info(this.stream, this.durable);
    } catch {
      await manager.consumers.add(this.stream, {
        durable_name: this.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: filter,
        max_ack_pending: this.options.maxAckPending ?? 2048,
        ack_wait: nanos(30_000),
      });
    }
  }

  private async handle(sink: EventSink, message: JsMsg): Promise<void> {
    const projectId = message.subject.slice(this.subjectPrefix.length + 1);
    const source = `nats:${message.subject}#${message.seq}`;
    const reject = (rejection: Omit<Rejection, 'projectId' | 'source' | 'payload'>) => this.reject(sink, message, { ...rejection, projectId, source, payload: textDecoder.decode(message.data.subarray(0, REJECTED_PAYLOAD_BYTES)) });

    let payload: unknown;
    try {
      payload = JSON.parse(textDecoder.decode(message.data));
    } catch {
      return reject({ reason: 'invalid_json', message: 'the message body is not valid JSON', details: [] });
    }
    const headerId = message.headers?.get('Nats-Msg-Id') || undefined;
    if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
      const body = payload as Record<string, unknown>;
      if (body.id !== undefined && headerId !== undefined && body.id !== headerId) {
        return reject({ reason: 'validation_failed', message: `body id ${String(body.id)} differs from Nats-Msg-Id ${headerId}`, details: [{ path: 'id', message: 'must equal Nats-Msg-Id' }] });
      }
      // A stable id makes JetStream redeliveries of the same message de-duplicate in the store. The
      // store time joins the sequence because a re-created stream numbers from 1 again, and a new
      // event with an old event's id and body would be taken for a repeat and never delivered.
      body.id ??= headerId ?? `evt_js${message.seq}_${message.timestampNanos}`;
    }
    const parsed = eventInputSchema.safeParse(payload);
    if (!parsed.success) {
      const details = parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
      return reject({ reason: 'validation_failed', message: details.map((d) => `${d.path}: ${d.message}`).join('; '), details });
    }
    try {
      await sink.ingest(projectId, parsed.data);
      message.ack();
    } catch (error) {
      if (isHooklineError(error) && !error.retryable) return reject({ reason: error.apiCode, message: error.message, details: error.details });
      const retryAfterMs = isHooklineError(error) && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : 0;
      message.nak(Math.max(this.options.nakDelayMs ?? 1000, retryAfterMs));
    }
  }

  /** Record first, then terminate: a message is never dropped without a trace. */
  private async reject(sink: EventSink, message: JsMsg, rejection: Rejection): Promise<void> {
    try {
      await sink.reject(rejection);
      // A bare +TERM: servers before 2.10.4 ignore "+TERM <reason>" and would redeliver the message
      // after ack_wait, forever. The reason is in our rejected-events log.
      message.term();
    } catch {
      message.nak(this.options.nakDelayMs ?? 1000);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    this.messages?.stop();
    await this.loop?.catch(() => {});
    await Promise.allSettled([...this.inflight]);
    await this.connection?.drain().catch(() => this.connection?.close());
    this.connection = null;
  }
}
