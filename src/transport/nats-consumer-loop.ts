import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';

export interface ConsumerLoopOptions {
  /** Opens the consumer's messages, making its stream and consumer again when they are gone. */
  open(): Promise<ConsumerMessages>;
  /** Takes the messages that arrived in one turn of the event loop, at most `messagesPerTurn`; resolves once each is settled. */
  handle(batch: JsMsg[]): Promise<void>;
  messagesPerTurn: number;
  connection: NatsConnection;
  logger?: Pick<Logger, 'info' | 'warn'> | undefined;
  /** Log fields naming the consumer (stream, durable). */
  labels: Record<string, unknown>;
}

/**
 * One pull consumer's messages handed over in batches, until `stop()`: those that arrive in one
 * turn of the event loop (a pull brings up to its batch at once), at most `messagesPerTurn`, form
 * one batch, and the rest follow in the next turn, after its I/O. When the messages end (the
 * consumer or stream deleted, NATS restarted without its store), it opens them again, backing off
 * while that fails; a connection closed for good ends it.
 */
export class ConsumerLoop {
  private messages: ConsumerMessages | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: () => void = () => {};
  /** Messages received this turn, not yet handed over. */
  private arrived: JsMsg[] = [];
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly options: ConsumerLoopOptions) {}

  /** Runs on `first`, the messages the caller opened (so that a failing start is the caller's to report); null to open them here. */
  start(first: ConsumerMessages | null): void {
    this.loop = this.run(first);
  }

  private async run(first: ConsumerMessages | null): Promise<void> {
    const { connection, logger, labels } = this.options;
    let messages = first;
    let failures = 0;
    let opened = first !== null;
    while (!this.stopping) {
      if (!messages) {
        try {
          messages = await this.options.open();
        } catch (error) {
          if (this.stopping || connection.isClosed()) return;
          logger?.warn({ err: error, ...labels }, 'JetStream consumer unavailable; retrying');
          await this.pause(Math.min(250 * 2 ** failures++, 5_000));
          continue;
        }
        if (this.stopping) {
          messages.stop();
          return;
        }
        if (opened) logger?.info(labels, 'JetStream consumer resumed');
        opened = true;
        failures = 0;
      }
      this.messages = messages;
      try {
        for await (const message of messages) {
          // The batch is handed over after this turn's I/O: every message of the pull read so far joins it.
          if (this.arrived.push(message) === 1) setImmediate(() => this.handOver());
        }
      } catch (error) {
        if (!this.stopping) logger?.warn({ err: error, ...labels }, 'JetStream consumer stopped; consuming again');
      }
      messages = null;
      // Nothing more to consume: the connection's end was logged, and reported to its owner, by connectNats.
      if (connection.isClosed()) return;
      await this.pause(250);
    }
  }

  /** Hands the messages collected so far, at most `messagesPerTurn`, over as one batch. */
  private handOver(): void {
    if (this.arrived.length === 0) return;
    let batch = this.arrived;
    if (batch.length > this.options.messagesPerTurn) {
      batch = this.arrived.splice(0, this.options.messagesPerTurn);
      setImmediate(() => this.handOver());
    } else {
      this.arrived = [];
    }
    const handled = this.options.handle(batch).finally(() => this.inflight.delete(handled));
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

  /**
   * Stops pulling; messages that arrived before the messages ended are still handed over (a
   * draining engine refuses them: nak'ed, redelivered to whoever consumes next). Resolves once
   * every batch is settled.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    this.messages?.stop();
    await this.loop?.catch(() => {});
    while (this.arrived.length > 0) this.handOver();
    await Promise.allSettled([...this.inflight]);
  }
}
