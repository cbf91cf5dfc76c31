import { AckPolicy, DeliverPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import type { ConsumerMessages, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { isHooklineError } from '../errors.js';
import { inputProblems, problemsLine } from '../input-messages.js';
import type { HooklineError } from '../errors.js';
import { eventInputSchema } from './event-input.js';
import type { EventInput } from './event-input.js';
import type { NatsAccess } from './nats-access.js';
import { maskedNatsUrl } from './nats-access.js';
import { natsSchemeWarnings } from './nats-seeds.js';
import { connectNats } from './nats-connection.js';
import { natsStartError } from './nats-start-error.js';
import { ensureConsumer, ensureStream, reachJetStream } from './nats-streams.js';
import type { EventSink, InboundTransport, Rejection } from './types.js';
import type { EventVerdict } from './verdict.js';
import { encodeVerdict, verdictSubject, verdictSubjectPrefix } from './verdict.js';
import { settled } from '../settled.js';

/** Messages a consumer pulls per request. */
export const DEFAULT_PULL_BATCH = 512;
/** Unacknowledged messages the server lets a consumer hold. */
export const DEFAULT_MAX_ACK_PENDING = 2048;

export interface NatsTransportOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** Authentication and TLS (src/transport/nats-access.ts). @default none: an open server */
  access?: Omit<NatsAccess, 'natsUrl'>;
  /** Replicas of the stream when this transport creates it; an existing one with another count fails the start. @default 1 */
  replicas?: number;
  /**
   * An open connection to consume on instead of one of its own (a cluster node shares its own
   * across its partitions' consumers); it stays open when the transport stops.
   * @default a connection of its own to `servers`
   */
  connection?: NatsConnection;
  /** The JetStream manager of `connection`, used instead of one made at each (re)start of the consumer; a cluster node passes its own. */
  manager?: JetStreamManager;
  /** JetStream stream holding inbound events. @default "HOOKLINE_EVENTS" */
  stream?: string;
  /** Events for project P are published on `<subjectPrefix>.P`. @default "hookline.events" */
  subjectPrefix?: string;
  /** Durable pull consumer name, shared by every node that consumes the stream. @default "hookline" */
  durable?: string;
  /**
   * The durable consumer's filter: which subjects under the prefix it takes (a cluster node's router
   * takes `<prefix>.*`, the events published without their partition). @default `<subjectPrefix>.>`
   */
  filterSubject?: string;
  /**
   * The sink passes accepted events on instead of storing them (a cluster node's router republishes
   * each on its partition's subject): the node that stores it sends the `accepted` verdict, and this
   * transport only the `rejected` ones it records. @default false
   */
  passesEventsOn?: boolean;
  /** Messages pulled per request, and the size of the local buffer. @default DEFAULT_PULL_BATCH (512) */
  batch?: number;
  /**
   * Unacknowledged messages the server lets this consumer hold at most (flow control). Given, an
   * existing durable consumer with another bound is set to it; left out, an existing one keeps its own.
   * @default DEFAULT_MAX_ACK_PENDING (2048)
   */
  maxAckPending?: number;
  /**
   * Most messages handed to the sink in one turn of the event loop. A cluster node's partition
   * consumers share `NODE_MESSAGES_PER_TURN` out among them (`partitionFlowControl`).
   * @default MAX_MESSAGES_PER_TURN (256)
   */
  messagesPerTurn?: number;
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
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Called once if the transport's own connection ends for good while it runs, with what to fix
   * (the consumer stops with it); a shared `connection` is its owner's to watch. @default none
   */
  onConnectionClosed?: (reason: HooklineError) => void;
  /**
   * Verdicts on events go to `<verdictPrefix>.<event id>` (src/transport/verdict.ts); a cluster node,
   * whose subjectPrefix carries the partition, passes the one of the cluster's prefix.
   * @default verdictSubjectPrefix(subjectPrefix)
   */
  verdictPrefix?: string;
}

/**
 * Most messages handed to the sink in one turn of the event loop; the rest follow in the next turn,
 * after its I/O. A batch's ingests run synchronously up to their LMDB writes (decode, validation,
 * fingerprint, envelope, encoding). Whole backlogs at once (1,000-2,000 messages a turn, up to
 * max_ack_pending) held the loop for 80-160 ms per turn: the attempts in flight waited that long for
 * their responses to be read, and delivery all but stopped until the backlog was ingested.
 */
export const MAX_MESSAGES_PER_TURN = 256;

/** Bytes of a rejected payload kept for diagnosis. */
const REJECTED_PAYLOAD_BYTES = 1024;
const textDecoder = new TextDecoder();

/** What one message asks of the sink, decided from the message alone. */
type Decision =
  | { kind: 'ingest'; message: JsMsg; projectId: string; eventId: string | undefined; input: EventInput }
  | { kind: 'reject'; message: JsMsg; eventId: string | undefined; rejection: Rejection };

/** A message whose rejection is being recorded: terminated once it is, nak'ed if it cannot be. */
interface Rejecting {
  message: JsMsg;
  eventId: string | undefined;
  rejection: Rejection;
  /** Whether the rejection reached the log; never rejects, since it is awaited only after the ingests. */
  recorded: Promise<boolean>;
}

/**
 * Inbound events from NATS JetStream, at least once. A message is acked only after its event (and
 * delivery) is committed to LMDB; one that can never be accepted (bad JSON, failed validation, an
 * unknown project, an id reused with another body) is recorded in the rejected-events log and then
 * terminated; a transient failure is nak'ed with a delay so JetStream redelivers it. Redeliveries are
 * harmless: the event id (body `id`, else `Nats-Msg-Id`, else one derived from the stream sequence
 * and store time) de-duplicates them.
 *
 * Messages are taken in batches: those that arrive in one turn of the event loop (a pull brings up
 * to `batch` at once), at most `MAX_MESSAGES_PER_TURN`, are validated together and handed to the
 * sink together, so the store commits them in one LMDB transaction (one fsync); each is then acked,
 * terminated or nak'ed on its own outcome once the batch has settled.
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
  /** Messages received this turn, not yet handed to the sink. */
  private arrived: JsMsg[] = [];
  private sink: EventSink | null = null;
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly options: NatsTransportOptions) {
    this.stream = options.stream ?? 'HOOKLINE_EVENTS';
    this.subjectPrefix = options.subjectPrefix ?? 'hookline.events';
    this.durable = options.durable ?? 'hookline';
  }

  /**
   * Connects and makes sure the stream and the durable consumer exist. A node calls it before it
   * opens its data directory, so that a wrong HOOKLINE_NATS_URL fails the start at once and
   * touches nothing; `start` calls it when nobody did.
   * @throws {HooklineError} `HOOKLINE_ERR_NATS_UNAVAILABLE` naming HOOKLINE_NATS_URL and what to check
   */
  async connect(): Promise<void> {
    if (this.connection) return;
    const shared = this.options.connection;
    let connection: NatsConnection | null = shared ?? null;
    try {
      // noAsyncTraces: otherwise every request (each pull) builds two errors with a stack trace, in
      // case it fails; in a cluster node's profile that was a tenth of its CPU.
      const { logger, onConnectionClosed } = this.options;
      if (!shared) for (const warning of natsSchemeWarnings(this.access().natsUrl, maskedNatsUrl)) logger?.warn({ natsUrl: maskedNatsUrl(this.access().natsUrl) }, warning);
      connection ??= await connectNats(this.access(), { name: 'hookline', noAsyncTraces: true, ...(logger ? { logger } : {}), ...(onConnectionClosed ? { onClosed: onConnectionClosed } : {}) });
      await this.ensureStreamAndConsumer(connection);
    } catch (error) {
      if (!shared) await connection?.close().catch(() => {});
      throw natsStartError(this.access(), error);
    }
    this.connection = connection;
    // A shared connection is a cluster partition's: the node logs its own start, not one per partition.
    if (!shared) {
      const servers = maskedNatsUrl(this.access().natsUrl);
      this.options.logger?.info(
        { servers, stream: this.stream, subjects: `${this.subjectPrefix}.>`, durable: this.durable },
        `NATS JetStream: consuming ${this.subjectPrefix}.> from stream ${this.stream} with durable consumer ${this.durable}, servers ${servers}`,
      );
    }
  }

  private access(): NatsAccess {
    const servers = this.options.servers;
    return { ...this.options.access, natsUrl: typeof servers === 'string' ? servers : servers.join(',') };
  }

  async start(sink: EventSink): Promise<void> {
    await this.connect();
    const connection = this.connection!;
    this.sink = sink;
    let messages: ConsumerMessages;
    try {
      messages = await this.consume(connection);
    } catch (error) {
      if (!this.options.connection) await connection.close().catch(() => {});
      throw natsStartError(this.access(), error);
    }
    this.loop = this.consumeLoop(connection, messages);
  }

  /**
   * Flow control: the client pulls `batch` messages at a time and asks for more as they arrive, so
   * the bound on work in flight is the server's: it sends no more than `max_ack_pending` unacked
   * messages. Every message handed to the sink stays unacked until its LMDB commit, hence at most
   * `max_ack_pending` ingests (and their promises) are in flight, however deep the stream is
   * (test/integration/nats-transport.test.ts bursts 5,000 messages at a stalled sink: 2,048 held).
   * `abort_on_missing_resource` makes the iterator end, instead of polling for 15-45 s at a time,
   * when the stream or consumer is gone (NATS restarted without its store, stream deleted):
   * `consumeLoop` then creates them again.
   */
  private async consume(connection: NatsConnection): Promise<ConsumerMessages> {
    await this.ensureStreamAndConsumer(connection);
    const consumer = await jetstream(connection).consumers.get(this.stream, this.durable);
    this.messages = await consumer.consume({ max_messages: this.options.batch ?? DEFAULT_PULL_BATCH, abort_on_missing_resource: true });
    return this.messages;
  }

  /** Collects every message into the turn's batch and, until `stop()`, consumes again whenever the iterator ends. */
  private async consumeLoop(connection: NatsConnection, first: ConsumerMessages): Promise<void> {
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
          // The batch is handed over after this turn's I/O: every message of the pull read so far joins it.
          if (this.arrived.push(message) === 1) setImmediate(() => this.handOver());
        }
      } catch (error) {
        if (!this.stopping) this.options.logger?.warn({ err: error, stream: this.stream, durable: this.durable }, 'JetStream consumer stopped; consuming again');
      }
      messages = null;
      // Nothing more to consume: the connection's end was logged, and reported to its owner, by connectNats.
      if (connection.isClosed()) return;
      await this.pause(250);
    }
  }

  /** Hands the messages collected so far, at most `messagesPerTurn`, to the sink as one batch. */
  private handOver(): void {
    if (this.arrived.length === 0 || !this.sink) return;
    let batch = this.arrived;
    const perTurn = this.options.messagesPerTurn ?? MAX_MESSAGES_PER_TURN;
    if (batch.length > perTurn) {
      batch = this.arrived.splice(0, perTurn);
      setImmediate(() => this.handOver());
    } else {
      this.arrived = [];
    }
    const handled = this.handleBatch(this.sink, batch).finally(() => this.inflight.delete(handled));
    this.inflight.add(handled);
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
    const log = this.options.logger;
    const manager = this.options.manager ?? (await reachJetStream(connection, log));
    const filter = this.options.filterSubject ?? `${this.subjectPrefix}.>`;
    const subjects = this.options.streamSubjects ?? [`${this.subjectPrefix}.>`];
    await ensureStream(manager, { name: this.stream, subjects, storage: StorageType.File, duplicate_window: nanos(this.options.duplicateWindowMs ?? 120_000), num_replicas: this.options.replicas ?? 1 }, log);
    await ensureConsumer(manager, this.stream, {
      durable_name: this.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: filter,
      max_ack_pending: this.options.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
      ack_wait: nanos(30_000),
    }, log, this.options.maxAckPending !== undefined ? { max_ack_pending: this.options.maxAckPending } : {});
  }

  /**
   * Every ingest and every rejection record of the batch is started in this one turn (one LMDB
   * commit for all of them), then each message is settled on its own outcome. A permanent ingest
   * failure is recorded as a rejection in a second round, together with the batch's others.
   */
  private async handleBatch(sink: EventSink, batch: JsMsg[]): Promise<void> {
    const decisions = batch.map((message) => this.decide(message));
    const ingesting = decisions.filter((decision) => decision.kind === 'ingest');
    const rejecting: Rejecting[] = [];
    for (const decision of decisions) if (decision.kind === 'reject') rejecting.push(this.record(sink, decision));
    const ingested = await Promise.allSettled(ingesting.map((decision) => settled(() => sink.ingest(decision.projectId, decision.input))));
    const refused: Rejecting[] = [];
    ingested.forEach((outcome, index) => {
      const { message, projectId, eventId } = ingesting[index]!;
      if (outcome.status === 'fulfilled') {
        const { answer, duplicate } = outcome.value;
        message.ack();
        if (!this.options.passesEventsOn) this.sendVerdict({ verdict: 'accepted', id: answer.id, projectId, deliveryId: answer.deliveryId, duplicate });
        return;
      }
      const error = outcome.reason;
      if (isHooklineError(error) && !error.retryable) {
        refused.push(this.record(sink, { kind: 'reject', message, eventId, rejection: this.rejection(message, projectId, { reason: error.apiCode, message: error.message, details: error.details }) }));
        return;
      }
      const retryAfterMs = isHooklineError(error) && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : 0;
      message.nak(Math.max(this.options.nakDelayMs ?? 1000, retryAfterMs));
    });
    const rejections = [...rejecting, ...refused];
    const recorded = await Promise.all(rejections.map((rejecting) => rejecting.recorded));
    recorded.forEach((stored, index) => this.settleRejection(rejections[index]!, stored));
  }

  /** Validation of one message, without I/O: the event to ingest, or why it can never be taken. */
  private decide(message: JsMsg): Decision {
    const projectId = message.subject.slice(this.subjectPrefix.length + 1);
    const headerId = message.headers?.get('Nats-Msg-Id') || undefined;
    // Whom the verdict is about: the header's id, until the body names the event's own.
    let eventId = headerId;
    const reject = (rejection: Omit<Rejection, 'projectId' | 'source' | 'payload'>): Decision => ({ kind: 'reject', message, eventId, rejection: this.rejection(message, projectId, rejection) });

    let payload: unknown;
    try {
      payload = JSON.parse(textDecoder.decode(message.data));
    } catch {
      return reject({ reason: 'invalid_json', message: 'the message body is not valid JSON', details: [] });
    }
    if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
      const body = payload as Record<string, unknown>;
      if (body.id !== undefined && headerId !== undefined && body.id !== headerId) {
        return reject({ reason: 'validation_failed', message: `body id ${String(body.id)} differs from Nats-Msg-Id ${headerId}`, details: [{ path: 'id', message: 'must equal Nats-Msg-Id' }] });
      }
      // A stable id makes JetStream redeliveries of the same message de-duplicate in the store. The
      // store time joins the sequence because a re-created stream numbers from 1 again, and a new
      // event with an old event's id and body would be taken for a repeat and never delivered.
      body.id ??= headerId ?? `evt_js${message.seq}_${message.timestampNanos}`;
      if (typeof body.id === 'string') eventId = body.id;
    }
    const parsed = eventInputSchema.safeParse(payload);
    if (!parsed.success) {
      const details = inputProblems(parsed.error);
      return reject({ reason: 'validation_failed', message: problemsLine(details), details });
    }
    return { kind: 'ingest', message, projectId, eventId, input: parsed.data };
  }

  private rejection(message: JsMsg, projectId: string, rejection: Omit<Rejection, 'projectId' | 'source' | 'payload'>): Rejection {
    return { ...rejection, projectId, source: `nats:${message.subject}#${message.seq}`, payload: textDecoder.decode(message.data.subarray(0, REJECTED_PAYLOAD_BYTES)) };
  }

  /** Record first, then terminate (`settleRejection`): a message is never dropped without a trace. */
  private record(sink: EventSink, decision: Extract<Decision, { kind: 'reject' }>): Rejecting {
    return { message: decision.message, eventId: decision.eventId, rejection: decision.rejection, recorded: settled(() => sink.reject(decision.rejection)).then(() => true, () => false) };
  }

  private settleRejection({ message, eventId, rejection }: Rejecting, recorded: boolean): void {
    if (!recorded) {
      message.nak(this.options.nakDelayMs ?? 1000);
      return;
    }
    // A bare +TERM: servers before 2.10.4 ignore "+TERM <reason>" and would redeliver the message
    // after ack_wait, forever. The reason is in our rejected-events log.
    message.term();
    if (eventId !== undefined) this.sendVerdict({ verdict: 'rejected', id: eventId, projectId: rejection.projectId, reason: rejection.reason, message: rejection.message });
  }

  /** Best effort, after the outcome is final: a verdict nobody hears, or one lost, changes nothing. */
  private sendVerdict(verdict: EventVerdict): void {
    const subject = verdictSubject(this.options.verdictPrefix ?? verdictSubjectPrefix(this.subjectPrefix), verdict.id);
    if (subject === null || !this.connection || this.connection.isClosed()) return;
    try {
      this.connection.publish(subject, encodeVerdict(verdict));
    } catch {
      // a connection closing under us: the producer reports that no verdict came
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    this.messages?.stop();
    await this.loop?.catch(() => {});
    // Messages that arrived before the iterator ended still go to the sink (a draining engine
    // refuses them: nak'ed, redelivered to whoever consumes next).
    while (this.arrived.length > 0 && this.sink) this.handOver();
    await Promise.allSettled([...this.inflight]);
    if (!this.options.connection) await this.connection?.drain().catch(() => this.connection?.close());
    this.connection = null;
  }
}
