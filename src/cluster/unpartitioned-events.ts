import { jetstream } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { HooklineError } from '../errors.js';
import type { Logger } from '../logger.js';
import { ingestSubject } from '../sdk/partition.js';
import { NatsTransport } from '../transport/nats.js';
import type { EventSink, Rejection } from '../transport/types.js';
import { verdictSubjectPrefix } from '../transport/verdict.js';

/**
 * Events published the single-node way, on `<prefix>.<projectId>` (`hookline publish` without
 * `--partitions`), to a cluster. No partition's consumer takes that subject (each takes
 * `<prefix>.<partition>.>`): such an event stayed in the stream for good, neither delivered nor
 * rejected. Every node now consumes them through one shared durable consumer
 * (`<durable>-unpartitioned`: JetStream hands each message to one of them) and republishes each
 * event on its partition's subject, where the partition's owner stores it and sends its verdict, as
 * for any event; the original is acked once JetStream has stored the copy. A message that can never
 * be an event (not JSON, failed validation) is rejected by the node that read it, in its
 * rejected-events log.
 *
 * The copy carries no Nats-Msg-Id: JetStream's duplicate window is the stream's, and would drop the
 * copy as a repeat of the original under the same id. The event's id is in the copy's body (the
 * original's header id, or one made from its stream sequence), so a copy made twice (the node died
 * between the publish and the ack) is a repeat to the owner's store.
 */

export interface UnpartitionedEventsOptions {
  /** HOOKLINE_NATS_URL, as a failure to start names it. */
  servers: string;
  connection: NatsConnection;
  manager: JetStreamManager;
  replicas: number;
  stream: string;
  /** HOOKLINE_NATS_SUBJECT_PREFIX */
  subjectPrefix: string;
  /** HOOKLINE_NATS_DURABLE: the router's consumer is `<durable>-unpartitioned`. */
  durable: string;
  partitions: number;
  /** Records a message that can never be an event (the engine's rejected-events log). */
  reject: (rejection: Rejection) => Promise<void>;
  logger: Logger;
}

export class UnpartitionedEvents {
  private readonly consumer: NatsTransport;

  constructor(private readonly options: UnpartitionedEventsOptions) {
    this.consumer = new NatsTransport({
      servers: options.servers,
      connection: options.connection,
      manager: options.manager,
      replicas: options.replicas,
      stream: options.stream,
      subjectPrefix: options.subjectPrefix,
      durable: `${options.durable}-unpartitioned`,
      filterSubject: `${options.subjectPrefix}.*`,
      passesEventsOn: true,
      verdictPrefix: verdictSubjectPrefix(options.subjectPrefix),
      logger: options.logger,
      // Rare traffic: a small share of the node's flow.
      batch: 64,
      maxAckPending: 256,
    });
  }

  async start(): Promise<void> {
    await this.consumer.start(this.sink());
  }

  private sink(): EventSink {
    const { connection, subjectPrefix, partitions, reject } = this.options;
    const client = jetstream(connection);
    const encoder = new TextEncoder();
    return {
      ingest: async (projectId, input, traceparent) => {
        const subject = ingestSubject(subjectPrefix, projectId, partitions);
        try {
          // The producer's trace context goes with the copy: the owner's ingest span is its child.
          await client.publish(subject, encoder.encode(JSON.stringify(input)), traceparent === undefined ? undefined : { headers: traceHeaders(traceparent) });
        } catch (error) {
          // Nak'ed (retryable): JetStream hands the original to a node again shortly.
          throw new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', `the event could not be passed on to ${subject}; it is redelivered`, { cause: error, retryAfterSeconds: 1 });
        }
        return { answer: { id: input.id!, deliveryId: null }, duplicate: false };
      },
      reject,
    };
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }
}

function traceHeaders(traceparent: string): MsgHdrs {
  const copy = headers();
  copy.set('traceparent', traceparent);
  return copy;
}
