/**
 * Reading Hookline's outcomes (HOOKLINE_NATS_OUTCOMES=1) from JetStream with a durable consumer:
 * each outcome is handed to the handler at least once, and acknowledged once the handler resolved.
 * Exported by `hookline/sdk/nats`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { OUTCOME_TYPES, outcomeStreamName, outcomeSubject, outcomeSubjectRoot } from './outcomes.js';
import type { Outcome, OutcomeType } from './outcomes.js';

/**
 * The zod schema of an outcome's body (sdk/outcome-schema.ts), loaded on demand: zod is an optional
 * peer dependency of the SDK, needed only by those who read outcomes.
 */
export async function loadOutcomeSchema(): Promise<typeof import('./outcome-schema.js').outcomeSchema> {
  return (await import('./outcome-schema.js')).outcomeSchema;
}

export interface ConsumeOutcomesOptions {
  /** The durable consumer's name: a consumer started again under it resumes where it stopped. */
  durable: string;
  /** Outcome types to receive (of several, the others are read and acknowledged unhandled). @default every type */
  types?: readonly OutcomeType[];
  /** Only this project's outcomes. @default every project */
  projectId?: string;
  /** Must match the server's HOOKLINE_NATS_STREAM (the outcomes are in `<stream>_OUTCOMES`). @default "HOOKLINE_EVENTS" */
  stream?: string;
  /** Must match the server's HOOKLINE_NATS_SUBJECT_PREFIX. @default "hookline.events" */
  subjectPrefix?: string;
  /** Wait before a failed handler's outcome is delivered again. @default 1000 */
  retryDelayMs?: number;
  /** Told of a message that is not an outcome (it is terminated, not delivered again). @default ignored */
  onInvalid?: (error: Error, subject: string) => void;
}

export interface OutcomeMessageInfo {
  subject: string;
  /** The message's sequence in the outcome stream. */
  seq: number;
  /** How many times JetStream has delivered it (above 1: a handler failed, or an ack was lost). */
  deliveryCount: number;
}

export interface OutcomeConsumer {
  /** Stops taking outcomes; the one being handled is acknowledged (or not) as its handler ends. */
  stop(): Promise<void>;
  /** Settles when consuming ended (after `stop`, or when the connection closed). */
  readonly done: Promise<void>;
}

/**
 * Consumes outcomes with the durable consumer `options.durable`, created when absent (from the
 * stream's start, only the subjects asked for). Each outcome is parsed with `outcomeSchema` and
 * handed to `handler`; it is acknowledged when the handler resolves, delivered again after
 * `retryDelayMs` when it throws. At least once: a handler that must act once per outcome keeps
 * `deliveryId` with `type` (or the message's `seq`) of what it handled. The stream is Hookline's
 * to create: before a Hookline with HOOKLINE_NATS_OUTCOMES=1 has started once, this rejects (stream not found).
 */
export async function consumeOutcomes(connection: NatsConnection, handler: (outcome: Outcome, info: OutcomeMessageInfo) => void | Promise<void>, options: ConsumeOutcomesOptions): Promise<OutcomeConsumer> {
  const [{ jetstream, jetstreamManager, AckPolicy, DeliverPolicy }, outcomeSchema] = await Promise.all([import('@nats-io/jetstream'), loadOutcomeSchema()]);
  const stream = outcomeStreamName(options.stream ?? 'HOOKLINE_EVENTS');
  const root = outcomeSubjectRoot(options.subjectPrefix ?? 'hookline.events');
  const project = options.projectId ?? '*';
  const types = options.types ?? OUTCOME_TYPES;
  // One filter subject: NATS before 2.10 takes no list of them, so other types are acknowledged unhandled.
  const filter = outcomeSubject(root, project, types.length === 1 ? types[0]! : '*');
  const manager = await jetstreamManager(connection);
  const existing = await manager.consumers.info(stream, options.durable).catch(() => null);
  if (!existing) {
    await manager.consumers.add(stream, { durable_name: options.durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: filter });
  }
  const consumer = await jetstream(connection).consumers.get(stream, options.durable);
  const messages = await consumer.consume();
  const retryDelayMs = options.retryDelayMs ?? 1_000;
  const done = (async () => {
    for await (const message of messages) {
      let outcome: Outcome;
      try {
        outcome = outcomeSchema.parse(message.json());
      } catch (error) {
        options.onInvalid?.(error as Error, message.subject);
        message.term();
        continue;
      }
      if (!types.includes(outcome.type)) {
        message.ack();
        continue;
      }
      try {
        await handler(outcome, { subject: message.subject, seq: message.seq, deliveryCount: message.info.deliveryCount });
        await message.ackAck().catch(() => false);
      } catch {
        message.nak(retryDelayMs);
      }
    }
  })();
  return {
    done,
    async stop() {
      await messages.close();
      await done;
    },
  };
}
