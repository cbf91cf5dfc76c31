/**
 * `hookline/sdk/nats`: publishing events to Hookline over NATS JetStream. Its own entry because its
 * declarations need @nats-io types, which `hookline/sdk` must not pull into consumers without NATS.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { ingestSubject } from './partition.js';
import type { SendEventInput } from './types.js';

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
  /** True when JetStream dropped it as a repeat of the same `Nats-Msg-Id` within its window. */
  duplicate: boolean;
}

const PROJECT_ID = /^[A-Za-z0-9_-]{1,64}$/;

function newEventId(): string {
  return `evt_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
}

/**
 * Publishes an event for Hookline on JetStream (`<prefix>.<projectId>`), for producers that talk NATS
 * directly. The event id doubles as `Nats-Msg-Id`, so a publisher that retries after a lost ack does
 * not create a second event. Resolves once JetStream has stored the message.
 * `@nats-io/jetstream` is loaded only when this is called, so the rest of the SDK needs no NATS.
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
  return { id, seq: ack.seq, duplicate: ack.duplicate };
}
