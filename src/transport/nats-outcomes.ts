import { StorageType, jetstream } from '@nats-io/jetstream';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { nanos } from '@nats-io/transport-node';
import type { OutcomeSink } from '../actors/outcome-reports.js';
import type { Logger } from '../logger.js';
import { outcomeStreamName, outcomeSubject, outcomeSubjectRoot } from '../sdk/outcomes.js';
import type { Outcome } from '../sdk/outcomes.js';
import { ensureStream, reachJetStream } from './nats-streams.js';
import type { NatsAccess } from './nats-access.js';
import { connectNats } from './nats-connection.js';
import { natsStartError } from './nats-start-error.js';

/**
 * Publishing outcomes on NATS (HOOKLINE_NATS_OUTCOMES=1), on a connection of its own so that a
 * backlog of outcomes never queues behind (or ahead of) a node's ingest and cluster traffic.
 *
 * Best effort: a publish that JetStream does not acknowledge is tried again a few times, then
 * given up and reported false (the engine counts it). Outcomes waiting for an ack are bounded;
 * beyond that bound a new one is given up at once, so a NATS outage costs memory of a bounded size
 * and never holds a delivery. The message id is the outcome's de-duplication id: a publish tried
 * again after a lost ack, or an outcome published again within the stream's duplicate window, is
 * stored once.
 */

export interface OutcomePublisherOptions {
  /** HOOKLINE_NATS_STREAM: the outcome stream is `<stream>_OUTCOMES`. */
  stream: string;
  /** HOOKLINE_NATS_SUBJECT_PREFIX, whose root the subjects take. */
  subjectPrefix: string;
  replicas: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Tries of one publish. @default 3 */
  tries?: number;
  /** Wait for JetStream's ack of one try. @default 5000 */
  ackTimeoutMs?: number;
  /** Outcomes waiting for an ack at most. @default 10000 */
  maxPending?: number;
}

/** How long JetStream remembers a message id: a repeat within it is dropped. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;

/** How long a stop waits for outcomes not yet acknowledged. */
const CLOSE_WAIT_MS = 2_000;

export class NatsOutcomePublisher implements OutcomeSink {
  /** Publishes not yet acknowledged or given up. */
  private readonly inFlight = new Set<Promise<boolean>>();
  private readonly root: string;

  private constructor(
    private readonly connection: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly options: OutcomePublisherOptions,
  ) {
    this.root = outcomeSubjectRoot(options.subjectPrefix);
  }

  /**
   * Connects and creates the outcome stream (`<stream>_OUTCOMES` on `<root>.outcomes.>`).
   * @throws {HooklineError} as a NATS start does, naming the setting to check
   */
  static async start(access: NatsAccess, options: OutcomePublisherOptions): Promise<NatsOutcomePublisher> {
    const connection = await connectNats(access, { name: 'hookline-outcomes', noAsyncTraces: true, logger: options.logger, stops: 'publishing outcomes has stopped' });
    try {
      const manager = await reachJetStream(connection, options.logger);
      const name = outcomeStreamName(options.stream);
      const subjects = [`${outcomeSubjectRoot(options.subjectPrefix)}.outcomes.>`];
      await ensureStream(manager, { name, subjects, storage: StorageType.File, duplicate_window: nanos(DUPLICATE_WINDOW_MS), num_replicas: options.replicas }, options.logger);
      options.logger.info({ stream: name, subjects }, `NATS outcomes: publishing to ${subjects[0]} in stream ${name}`);
      return new NatsOutcomePublisher(connection, jetstream(connection), options);
    } catch (error) {
      await connection.close().catch(() => {});
      throw natsStartError(access, error);
    }
  }

  publish(outcome: Outcome, messageId: string): Promise<boolean> {
    if (this.inFlight.size >= (this.options.maxPending ?? 10_000)) return Promise.resolve(false);
    const publishing = this.tryPublishing(outcome, messageId);
    this.inFlight.add(publishing);
    void publishing.then(() => this.inFlight.delete(publishing));
    return publishing;
  }

  private async tryPublishing(outcome: Outcome, messageId: string): Promise<boolean> {
    const subject = outcomeSubject(this.root, outcome.projectId, outcome.type);
    const body = JSON.stringify(outcome);
    const tries = this.options.tries ?? 3;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.js.publish(subject, body, { msgID: messageId, timeout: this.options.ackTimeoutMs ?? 5_000 });
        return true;
      } catch (error) {
        if (attempt >= tries || this.connection.isClosed()) {
          this.options.logger.warn({ err: error, subject, messageId }, 'could not publish an outcome on NATS; it is not published');
          return false;
        }
        await new Promise<void>((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
      }
    }
  }

  /**
   * Waits for the publishes in flight, for `CLOSE_WAIT_MS` at most (a NATS down would hold a stop
   * for all their tries), then closes the connection: what is still unacknowledged is given up.
   */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
    await Promise.race([Promise.all([...this.inFlight]), waited]);
    clearTimeout(timer);
    await this.connection.drain().catch(() => this.connection.close());
  }
}
