import { AckPolicy, DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { ConsumerConfig, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { ConsumerLoop } from './nats-consumer-loop.js';
import type { NatsMessages, OverloadAnswer, OverloadRoute } from './nats-messages.js';
import { ensureConsumer } from './nats-streams.js';
import { MAX_REDELIVERY_DELAY_MS, redeliveryDelay } from './redelivery-delay.js';
import type { EventSink } from './types.js';

/**
 * Events of a project over HOOKLINE_MAX_WAITING_PER_PROJECT wait in the stream, not in the
 * consumer's window. One consumer carries every project's events (per partition in a cluster), and
 * a refused message nak'ed for later stays unacknowledged: a project with `max_ack_pending` of them
 * held the whole window, and the other projects' events were not delivered at all while it was
 * over its limit (2,048 of one project's, then nothing of another's for as long as it lasted).
 *
 * So the first `overloaded` refusal parks the project: a durable consumer of its own subject
 * (`<durable>-park-<project>`) is made from just past the main consumer's ack floor, which covers
 * every message of the project the main consumer has not acked. Only once that consumer exists is
 * the refused message acked; from then on the main consumer acks the project's messages unread
 * (set aside), and the project's consumer ingests them, in stream order, as the project has room.
 * Its own window (`PARKED_MAX_ACK_PENDING`) bounds how many of the project's refused events are
 * held at once. They are nak'ed for 1 s while the project takes some of its events (it drains as
 * fast as its room frees), and for twice as long after each batch it refuses whole, up to 30 s: a
 * project over its limit for hours costs one window of refusals every 30 s (128, where a window of
 * 2,048 every 5 s was refused before), and takes its events again within 30 s of having room.
 *
 * States of one park:
 * - `parking`: its consumer is being made; messages set aside wait for it, then are acked (or
 *   nak'ed, if it could not be made, and the park is forgotten so that the next refusal tries again).
 * - `draining`: the main consumer acks the project's messages unread; its consumer ingests them.
 * - `unparking`: its consumer was seen empty; the main consumer ingests the project's messages
 *   itself again, and its consumer is asked once more. Still empty: `deleting`; not (a message set
 *   aside before came in the meantime) or a refusal meanwhile: `draining` again.
 * - `deleting`: its consumer stops and is deleted; a refusal meanwhile waits for that, then parks
 *   the project anew. Should the delete fail, `draining` again.
 *
 * The parks are durable consumers: a start (or a cluster node taking the partition over) finds them
 * and drains them again before consuming the stream, so a crash or restart loses nothing set aside.
 * A message the project's consumer already ingested may come again (a set aside message acked before
 * the floor advanced): the store's event-id de-duplication answers it as a repeat.
 */

/** Unacknowledged messages a parked project's consumer holds: the most of its refused events held at once. */
export const PARKED_MAX_ACK_PENDING = 128;

/** The delay of a parked project's refused events while it takes some; it doubles while it takes none (refusedDelay). */
const DRAIN_NAK_FIRST_MS = 1_000;

/** The first wait before a park found not yet empty is asked again; it doubles up to MAX_REDELIVERY_DELAY_MS. */
const RECHECK_FIRST_MS = 1_000;

/** The durable consumer holding project `projectId`'s parked events. */
export function parkedConsumerName(durable: string, projectId: string): string {
  return `${durable}-park-${projectId}`;
}

type ParkState = 'parking' | 'draining' | 'unparking' | 'deleting';

interface Park {
  readonly projectId: string;
  readonly consumer: string;
  state: ParkState;
  /** The first stream sequence its consumer covers, once that consumer exists. */
  ready: Promise<number>;
  /** Settles once a delete under way is over (the park forgotten, or `draining` again); never rejects. */
  deleted: Promise<void>;
  loop: ConsumerLoop | null;
  checking: boolean;
  recheck: NodeJS.Timeout | null;
  recheckMs: number;
  /** Batches of its events refused whole in a row (refusedDelay). */
  stalls: number;
}

export interface ProjectParkingOptions {
  connection: NatsConnection;
  manager: JetStreamManager;
  stream: string;
  /** The main consumer: its ack floor is where a park starts, its name the parks' prefix. */
  durable: string;
  subjectPrefix: string;
  messages: NatsMessages;
  sink: EventSink;
  messagesPerTurn: number;
  logger?: Pick<Logger, 'info' | 'warn'> | undefined;
}

/** The parks of one transport's projects, and the OverloadRoute of its main consumer. */
export class ProjectParking implements OverloadRoute {
  private readonly parks = new Map<string, Park>();
  private stopped = false;

  constructor(private readonly options: ProjectParkingOptions) {}

  /** Drains the parks left by an earlier run (a restart, a partition taken over): call before consuming the stream. */
  async resume(): Promise<void> {
    const { manager, stream, durable, subjectPrefix } = this.options;
    for await (const info of manager.consumers.list(stream)) {
      const filter = info.config.filter_subject ?? '';
      const projectId = filter.slice(subjectPrefix.length + 1);
      if (!filter.startsWith(`${subjectPrefix}.`) || projectId.includes('.') || info.name !== parkedConsumerName(durable, projectId)) continue;
      // Resumed by an earlier try of this listing (a start retries it when the listing fails midway).
      if (this.parks.has(projectId)) continue;
      // Not made again past its ack floor, as a partition's consumer is (cluster-node.ts): a crash
      // between the delete and the create would lose the messages set aside. Those the run before
      // was handed and never acked come back after ack_wait (30 s).
      const start = info.config.opt_start_seq ?? 1;
      const park = this.newPark(projectId, Promise.resolve(start));
      park.state = 'draining';
      this.options.logger?.info({ projectId, stream, consumer: park.consumer, from: start, waiting: info.num_pending + info.num_ack_pending }, `project ${projectId}: resuming its parked NATS events (consumer ${park.consumer})`);
      this.drain(park, start);
    }
  }

  setAside(projectId: string, message: JsMsg): Promise<boolean> | null {
    const park = this.parks.get(projectId);
    if (!park || park.state === 'unparking' || park.state === 'deleting') return null;
    return park.ready.then((start) => message.seq >= start);
  }

  overloaded(projectId: string, message: JsMsg): Promise<OverloadAnswer> {
    if (this.stopped) return Promise.resolve({ kind: 'nak' });
    const park = this.parks.get(projectId);
    if (park?.state === 'deleting') return park.deleted.then(() => this.overloaded(projectId, message));
    if (park?.state === 'unparking') park.state = 'draining';
    return (park ?? this.park(projectId)).ready.then((start) => (message.seq >= start ? { kind: 'set_aside' } : { kind: 'nak' }));
  }

  private newPark(projectId: string, ready: Promise<number>): Park {
    const park: Park = { projectId, consumer: parkedConsumerName(this.options.durable, projectId), state: 'parking', ready, deleted: Promise.resolve(), loop: null, checking: false, recheck: null, recheckMs: RECHECK_FIRST_MS, stalls: 0 };
    this.parks.set(projectId, park);
    return park;
  }

  private park(projectId: string): Park {
    const park = this.newPark(projectId, Promise.resolve(0));
    park.ready = this.createConsumer(park).then(
      (start) => {
        park.state = 'draining';
        this.drain(park, start);
        return start;
      },
      (error: unknown) => {
        if (this.parks.get(projectId) === park) this.parks.delete(projectId);
        this.options.logger?.warn({ err: error, projectId, stream: this.options.stream, consumer: park.consumer }, `project ${projectId} is over its waiting limit, and its NATS events could not be parked; they are nak'ed meanwhile`);
        throw error;
      },
    );
    // Settled by every message waiting on it; this one only keeps an unawaited failure quiet.
    park.ready.catch(() => {});
    return park;
  }

  private consumerConfig(park: Park, start: number): Partial<ConsumerConfig> & { durable_name: string } {
    return {
      durable_name: park.consumer,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start,
      filter_subject: `${this.options.subjectPrefix}.${park.projectId}`,
      max_ack_pending: PARKED_MAX_ACK_PENDING,
      ack_wait: nanos(30_000),
    };
  }

  /** Makes the project's consumer from just past the main consumer's ack floor; resolves with where it starts. */
  private async createConsumer(park: Park): Promise<number> {
    const { manager, stream, durable, logger } = this.options;
    const main = await manager.consumers.info(stream, durable);
    const start = main.ack_floor.stream_seq + 1;
    try {
      await manager.consumers.add(stream, this.consumerConfig(park, start));
    } catch (error) {
      // Made by an earlier run (in a cluster, the partition's previous owner): it covers the project from its own start.
      const existing = await manager.consumers.info(stream, park.consumer).catch(() => null);
      if (existing?.config.filter_subject !== `${this.options.subjectPrefix}.${park.projectId}`) throw error;
      return existing.config.opt_start_seq ?? 1;
    }
    logger?.info(
      { projectId: park.projectId, stream, consumer: park.consumer, from: start },
      `project ${park.projectId} is over its waiting limit (HOOKLINE_MAX_WAITING_PER_PROJECT): its NATS events wait in stream ${stream} from seq ${start} and are ingested as it has room (consumer ${park.consumer}); other projects' events go on`,
    );
    return start;
  }

  private drain(park: Park, start: number): void {
    if (this.stopped) return;
    const { connection, manager, stream, messages, sink } = this.options;
    park.loop = new ConsumerLoop({
      open: async () => {
        // Gone (deleted by hand, NATS restarted without its store): made again from the same start, which still covers every message set aside.
        await ensureConsumer(manager, stream, this.consumerConfig(park, start), this.options.logger);
        const consumer = await jetstream(connection).consumers.get(stream, park.consumer);
        return consumer.consume({ max_messages: PARKED_MAX_ACK_PENDING, abort_on_missing_resource: true });
      },
      handle: async (batch) => {
        let refused = 0;
        let delayMs: number | undefined;
        // Still over its limit: nak'ed, never set aside again. The whole batch's outcomes are
        // settled in one synchronous pass, so once it is over (a microtask later) they are all counted.
        const route: OverloadRoute = {
          setAside: () => null,
          overloaded: () => {
            refused++;
            return new Promise((resolve) => queueMicrotask(() => resolve({ kind: 'nak', delayMs: (delayMs ??= this.refusedDelay(park, refused < batch.length)) })));
          },
        };
        await messages.handleBatch(sink, batch, route);
        if (refused > 0) return;
        park.stalls = 0;
        park.recheckMs = RECHECK_FIRST_MS;
        if (batch.at(-1)!.info.pending === 0) void this.checkDrained(park);
      },
      messagesPerTurn: this.options.messagesPerTurn,
      connection,
      logger: this.options.logger,
      labels: { stream, durable: park.consumer, projectId: park.projectId },
    });
    park.loop.start(null);
    void this.checkDrained(park);
  }

  /**
   * When a batch's refused messages come again: soon (`DRAIN_NAK_FIRST_MS`) while the project takes
   * some of its events, so that it drains as fast as its room frees; each batch refused whole
   * doubles it, up to 30 s. One delay for the batch keeps its messages in stream order.
   */
  private refusedDelay(park: Park, progressed: boolean): number {
    park.stalls = progressed ? 0 : park.stalls + 1;
    return redeliveryDelay({ deliveryCount: park.stalls + 1, baseMs: DRAIN_NAK_FIRST_MS, random: () => 0.5 });
  }

  /** Unparks the project once its consumer holds nothing; asks again later while it does. */
  private async checkDrained(park: Park): Promise<void> {
    if (park.checking || park.state !== 'draining' || this.stopped) return;
    park.checking = true;
    if (park.recheck) clearTimeout(park.recheck);
    park.recheck = null;
    let drained = false;
    try {
      if (await this.isEmpty(park)) {
        // From here the main consumer ingests the project's messages itself. One set aside before
        // is in the stream, so its consumer still counts it unless it has ingested it.
        park.state = 'unparking';
        if ((await this.isEmpty(park)) && park.state === 'unparking') drained = await this.unpark(park);
      }
    } catch (error) {
      this.options.logger?.warn({ err: error, projectId: park.projectId, consumer: park.consumer }, "could not read a parked project's consumer; asking again later");
    } finally {
      if (park.state === 'unparking') park.state = 'draining';
      park.checking = false;
    }
    if (drained || this.stopped || park.state !== 'draining') return;
    park.recheck = setTimeout(() => void this.checkDrained(park), park.recheckMs);
    park.recheck.unref();
    park.recheckMs = Math.min(park.recheckMs * 2, MAX_REDELIVERY_DELAY_MS);
  }

  private async isEmpty(park: Park): Promise<boolean> {
    const info = await this.options.manager.consumers.info(this.options.stream, park.consumer);
    return info.num_pending === 0 && info.num_ack_pending === 0;
  }

  /** Stops and deletes the project's consumer; false (and `draining` again) if the delete failed. */
  private async unpark(park: Park): Promise<boolean> {
    park.state = 'deleting';
    const { manager, stream, logger } = this.options;
    let deleted = false;
    park.deleted = (async () => {
      await park.loop?.stop();
      park.loop = null;
      try {
        await manager.consumers.delete(stream, park.consumer);
        deleted = true;
        this.parks.delete(park.projectId);
        logger?.info({ projectId: park.projectId, stream, consumer: park.consumer }, `project ${park.projectId}: its parked NATS events are all ingested; its events are consumed with the others again`);
      } catch (error) {
        logger?.warn({ err: error, projectId: park.projectId, consumer: park.consumer }, "could not delete a drained park's consumer; draining it again");
        park.state = 'draining';
        this.drain(park, await park.ready);
      }
    })();
    await park.deleted;
    return deleted;
  }

  /** Stops draining; the parks stay in JetStream for the next start (or the partition's next owner). */
  async stop(): Promise<void> {
    this.stopped = true;
    const parks = [...this.parks.values()];
    for (const park of parks) if (park.recheck) clearTimeout(park.recheck);
    await Promise.allSettled(parks.map((park) => park.deleted));
    await Promise.allSettled(parks.map((park) => park.loop?.stop()));
  }
}
