/**
 * `hookline/sdk/nats`: publishing events to Hookline over NATS JetStream, and consuming the
 * outcomes it publishes (HOOKLINE_NATS_OUTCOMES, `consumeOutcomes`). Its own entry because its
 * declarations need @nats-io types, which `hookline/sdk` must not pull into consumers without NATS.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { HooklineApiError } from './errors.js';
import { ingestSubject } from './partition.js';
import type { SendEventInput } from './types.js';

export type { ConsumeOutcomesOptions, OutcomeConsumer, OutcomeMessageInfo } from './outcome-consumer.js';
export { consumeOutcomes, loadOutcomeSchema } from './outcome-consumer.js';
export type { Outcome, OutcomeType } from './outcomes.js';
export { OUTCOME_TYPES, outcomeStreamName, outcomeSubject, outcomeSubjectRoot } from './outcomes.js';

export interface PublishEventOptions {
  /** Must match the server's HOOKLINE_NATS_SUBJECT_PREFIX. @default "hookline.events" */
  subjectPrefix?: string;
  /**
   * The cluster's partition count (HOOKLINE_PARTITIONS) when publishing to a cluster: the subject
   * then carries the project's partition, `<prefix>.<partition>.<projectId>`.
   * @default undefined (a single node: `<prefix>.<projectId>`)
   */
  partitions?: number;
  /**
   * How long to wait for JetStream's ack before rejecting (the message may still have been stored:
   * publish again with the same id, and JetStream drops the repeat). @default 5000
   */
  timeoutMs?: number;
}

export interface PublishEventResult {
  /** The event id, sent as `Nats-Msg-Id` (generated when the event had none). */
  id: string;
  /** The JetStream stream sequence of the message. */
  seq: number;
  /**
   * True when JetStream dropped it as a repeat of the same `Nats-Msg-Id` within its window: the
   * same event again (a different body under the id throws instead; see `publishEvent`).
   */
  duplicate: boolean;
}

/** The `code` publishEvent's error has when the id was already published with a different body, as HTTP answers 409. */
export const EVENT_ID_CONFLICT_CODE = 'event_id_conflict';

const PROJECT_ID = /^[A-Za-z0-9_-]{1,64}$/;

function newEventId(): string {
  return `evt_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
}

/** JSON with object keys sorted, so that two spellings of one value compare equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The parts of a published body that make an event: a repeat has the same, in any key order. */
function sameEvent(first: unknown, again: unknown): boolean {
  if (first === null || typeof first !== 'object' || again === null || typeof again !== 'object') return false;
  const a = first as Record<string, unknown>;
  const b = again as Record<string, unknown>;
  const sameTime = a.timestamp === undefined || b.timestamp === undefined ? a.timestamp === b.timestamp : Date.parse(String(a.timestamp)) === Date.parse(String(b.timestamp));
  return sameTime && a.type === b.type && canonicalJson(a.data) === canonicalJson(b.data) && canonicalJson(a.metadata ?? {}) === canonicalJson(b.metadata ?? {});
}

/**
 * Publishes an event for Hookline on JetStream (`<prefix>.<projectId>`), for producers that talk NATS
 * directly. The event id doubles as `Nats-Msg-Id`, so a publisher that retries after a lost ack does
 * not create a second event. Resolves once JetStream has stored the message.
 *
 * JetStream drops a message whose `Nats-Msg-Id` it saw within its duplicate window without looking
 * at the body, so Hookline never sees a changed body sent under a used id then. publishEvent reads
 * the stored copy back: the same event is `duplicate: true`; another one rejects with a
 * `HooklineApiError` of code `event_id_conflict` (status 409, as `POST /v1/events` answers), since
 * nothing of it was stored. When the copy cannot be read (a publisher not allowed to read the stream,
 * a message already gone), it is taken for a repeat, as before.
 * `@nats-io/jetstream` is loaded only when this is called, so the rest of the SDK needs no NATS.
 * @throws {HooklineApiError} `event_id_conflict` when the id was already published with another body
 */
export async function publishEvent(connection: NatsConnection, projectId: string, event: SendEventInput, options: PublishEventOptions = {}): Promise<PublishEventResult> {
  // The project id is a subject token: a dot, a wildcard or nothing would send the event elsewhere.
  if (!PROJECT_ID.test(projectId)) throw new TypeError(`publishEvent: project id ${JSON.stringify(projectId)} must be 1-64 of A-Z a-z 0-9 _ -`);
  const { jetstream } = await import('@nats-io/jetstream');
  const id = event.id ?? newEventId();
  const timestamp = event.timestamp instanceof Date ? event.timestamp.toISOString() : event.timestamp;
  const body = JSON.stringify({ ...event, id, ...(timestamp !== undefined ? { timestamp } : {}) });
  const subject = ingestSubject(options.subjectPrefix ?? 'hookline.events', projectId, options.partitions);
  const ack = await jetstream(connection).publish(subject, body, { msgID: id, ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}) });
  if (ack.duplicate && !(await isRepeatOfStored(connection, ack.stream, ack.seq, body))) {
    const message = `event ${id} was already published with a different body (JetStream kept the first, stream ${ack.stream} seq ${ack.seq}, and dropped this one); use a new id for a new event`;
    throw new HooklineApiError({ status: 409, code: EVENT_ID_CONFLICT_CODE, message, details: [{ path: 'id', message: 'reused with a different body', stream: ack.stream, seq: ack.seq }] });
  }
  return { id, seq: ack.seq, duplicate: ack.duplicate };
}

/** Whether the message JetStream kept under the id is the same event as `body`; true when it cannot be read. */
async function isRepeatOfStored(connection: NatsConnection, stream: string, seq: number, body: string): Promise<boolean> {
  try {
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const stored = await (await jetstreamManager(connection, { checkAPI: false })).streams.getMessage(stream, { seq });
    if (!stored) return true;
    return sameEvent(JSON.parse(new TextDecoder().decode(stored.data)), JSON.parse(body));
  } catch {
    return true;
  }
}
