import type { Tracing } from '../tracing/tracing.js';
import { AckPolicy, DeliverPolicy, StorageType, jetstream } from '@nats-io/jetstream';
import type { ConsumerMessages, JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import type { HooklineError } from '../errors.js';
import type { NatsAccess } from './nats-access.js';
import { maskedNatsUrl } from './nats-access.js';
import { natsSchemeWarnings } from './nats-seeds.js';
import { connectNats } from './nats-connection.js';
import { ConsumerLoop } from './nats-consumer-loop.js';
import { NatsMessages } from './nats-messages.js';
import { ProjectParking } from './nats-parking.js';
import { natsStartError } from './nats-start-error.js';
import { ensureConsumer, ensureStream, reachJetStream, retrying } from './nats-streams.js';
import type { EventSink, InboundTransport } from './types.js';
import type { EventVerdict } from './verdict.js';
import { encodeVerdict, verdictSubject, verdictSubjectPrefix } from './verdict.js';

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
  /**
   * Redelivery delay after a first transient failure (storage full, draining), or the failure's
   * Retry-After if longer; it doubles with each later delivery of the message, up to 30 s
   * (redelivery-delay.ts).
   * @default 1000
   */
  nakDelayMs?: number;
  /** Uniform in [0, 1), like `Math.random`: the jitter of redelivery delays. @default Math.random */
  random?: () => number;
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
  /** Each message's ingest is a span, a child of its `traceparent` header. @default null, no tracing */
  tracing?: Tracing | null;
}

/**
 * Most messages handed to the sink in one turn of the event loop; the rest follow in the next turn,
 * after its I/O. A batch's ingests run synchronously up to their LMDB writes (decode, validation,
 * fingerprint, envelope, encoding). Whole backlogs at once (1,000-2,000 messages a turn, up to
 * max_ack_pending) held the loop for 80-160 ms per turn: the attempts in flight waited that long for
 * their responses to be read, and delivery all but stopped until the backlog was ingested.
 */
export const MAX_MESSAGES_PER_TURN = 256;

/**
 * Inbound events from NATS JetStream, at least once: the ack / nak / term mapping is
 * nats-messages.ts's. Redeliveries are harmless: the event id (body `id`, else `Nats-Msg-Id`, else one
 * derived from the stream sequence and store time) de-duplicates them. A project over
 * HOOKLINE_MAX_WAITING_PER_PROJECT is parked (nats-parking.ts): its events wait in the stream for a
 * consumer of its own, and the other projects' go on.
 *
 * Messages are taken in batches (nats-consumer-loop.ts): those that arrive in one turn of the event
 * loop, at most `messagesPerTurn`, are validated together and handed to the sink together, so the
 * store commits them in one LMDB transaction (one fsync); each is then acked, terminated or nak'ed
 * on its own outcome once the batch has settled.
 */
export class NatsTransport implements InboundTransport {
  readonly name = 'nats';
  readonly stream: string;
  readonly subjectPrefix: string;
  readonly durable: string;
  private connection: NatsConnection | null = null;
  private loop: ConsumerLoop | null = null;
  private parking: ProjectParking | null = null;

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

  /** Resumes the parks an earlier run left (nats-parking.ts), then consumes the stream. */
  async start(sink: EventSink): Promise<void> {
    await this.connect();
    const connection = this.connection!;
    const messages = new NatsMessages({ subjectPrefix: this.subjectPrefix, nakDelayMs: this.options.nakDelayMs ?? 1000, random: this.options.random ?? Math.random, tracing: this.options.tracing ?? null, passesEventsOn: this.options.passesEventsOn ?? false, sendVerdict: (verdict) => {
        if (verdict.verdict !== 'accepted' || !this.options.passesEventsOn) this.sendVerdict(verdict);
      } });
    const messagesPerTurn = this.options.messagesPerTurn ?? MAX_MESSAGES_PER_TURN;
    const labels = { stream: this.stream, durable: this.durable };
    let first: ConsumerMessages;
    let parking: ProjectParking | null = null;
    try {
      const manager = await this.manager(connection);
      parking = new ProjectParking({ connection, manager, stream: this.stream, durable: this.durable, subjectPrefix: this.subjectPrefix, messages, sink, messagesPerTurn, logger: this.options.logger });
      // Before the stream: a parked project's messages are set aside from the first one on.
      await retrying(`resuming the parked projects of ${this.durable}`, () => parking!.resume(), this.options.logger);
      first = await retrying(`opening consumer ${this.durable} on ${this.stream}`, () => this.consume(connection), this.options.logger);
    } catch (error) {
      await parking?.stop();
      if (!this.options.connection) await connection.close().catch(() => {});
      throw natsStartError(this.access(), error);
    }
    this.parking = parking;
    this.loop = new ConsumerLoop({ open: () => this.consume(connection), handle: (batch) => messages.handleBatch(sink, batch, parking), messagesPerTurn, connection, logger: this.options.logger, labels });
    this.loop.start(first);
  }

  private manager(connection: NatsConnection): Promise<JetStreamManager> {
    return this.options.manager ? Promise.resolve(this.options.manager) : reachJetStream(connection, this.options.logger);
  }

  /**
   * Flow control: the client pulls `batch` messages at a time and asks for more as they arrive, so
   * the bound on work in flight is the server's: it sends no more than `max_ack_pending` unacked
   * messages. Every message handed to the sink stays unacked until its LMDB commit, hence at most
   * `max_ack_pending` ingests (and their promises) are in flight, however deep the stream is
   * (test/integration/nats-transport.test.ts bursts 5,000 messages at a stalled sink: 2,048 held).
   * `abort_on_missing_resource` makes the iterator end, instead of polling for 15-45 s at a time,
   * when the stream or consumer is gone (NATS restarted without its store, stream deleted): the
   * loop then creates them again.
   */
  private async consume(connection: NatsConnection): Promise<ConsumerMessages> {
    await this.ensureStreamAndConsumer(connection);
    const consumer = await jetstream(connection).consumers.get(this.stream, this.durable);
    return consumer.consume({ max_messages: this.options.batch ?? DEFAULT_PULL_BATCH, abort_on_missing_resource: true });
  }

  private async ensureStreamAndConsumer(connection: NatsConnection): Promise<void> {
    const log = this.options.logger;
    const manager = await this.manager(connection);
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

  /** Stops consuming; resolves once every message handed to the sink is settled. Parks stay in JetStream for the next start. */
  async stop(): Promise<void> {
    // The stream's batches first: one refused may be waiting for its project's park.
    await this.loop?.stop();
    await this.parking?.stop();
    if (!this.options.connection) await this.connection?.drain().catch(() => this.connection?.close());
    this.connection = null;
  }
}
