import type { DeliveryStatus } from '../machines/index.js';
import type { FilterRule } from '../filter/rule.js';
import type { EventType } from '../sdk/types.js';

/**
 * What Hookline keeps in LMDB. Times are milliseconds since the epoch; the HTTP layer renders them
 * as ISO 8601. Every key begins with the project id, so a project is one contiguous key range,
 * except a delivery's log entries: they begin with the delivery id (delivery-tables.ts says why).
 */

export interface ProjectRecord {
  id: string;
  name: string;
  createdAt: number;
}

export interface SigningSecretRecord {
  secret: string;
  createdAt: number;
  /** null for the current secret; set when a rotation retires it. */
  expiresAt: number | null;
}

/** The webhook configuration: the persisted snapshot of the configuration machine plus its data. */
export interface WebhookRecord {
  callbackUrl: string;
  state: 'active' | 'paused' | 'disabled';
  eventTypes: EventType[];
  createdAt: number;
  updatedAt: number;
  /** Newest first. Every secret whose grace has not expired signs. */
  secrets: SigningSecretRecord[];
  /** Start of the current unbroken run of failed attempts; null after any success. */
  failingSince: number | null;
  /** When Hookline last disabled the endpoint; null again once an attempt succeeds after it (its recovery). */
  disabledAt: number | null;
  disabledReason: string | null;
  /*
   * Optional below: absent from records written before they existed. The actor reads a record
   * with `withWebhookDefaults` (actors/webhook-settings.ts), which fills in each default.
   */
  /** Sent with every delivery, names and values as the operator set them (not signed). */
  headers?: Record<string, string>;
  /** Payload filter (filter/rule.ts); null delivers every event of `eventTypes`. */
  filter?: FilterRule | null;
  /** `fifo`: one delivery at a time, in ingest order. */
  ordering?: 'unordered' | 'fifo';
  /** Where Hookline's operational events about the project go; null: nowhere. */
  operationalUrl?: string | null;
  /** Signs operational events; made with the first `operationalUrl` and kept, like `secrets`. */
  operationalSecret?: string | null;
  /** Attempts in flight to the endpoint at most, below the node's HOOKLINE_ENDPOINT_CONCURRENCY; null: that cap alone. */
  maxConcurrency?: number | null;
  /** Attempts started per second at most (a token bucket, endpoint-pacing.ts); null: unpaced. */
  rateLimitPerSecond?: number | null;
  /** Delay in ms before each attempt of a round, for the project's new deliveries and rounds; null: the node's HOOKLINE_RETRY_SCHEDULE. */
  retrySchedule?: number[] | null;
  /** Whether each attempt carries its span's W3C `traceparent` header (not signed); only while tracing is on. */
  sendTraceparent?: boolean;
}

export interface IngestAnswer {
  id: string;
  deliveryId: string | null;
}

export interface EventRecord {
  id: string;
  type: EventType;
  /**
   * With the envelope, what tells a harmless repeat from a conflicting reuse of the id: the
   * timestamp the producer gave, after `~` (`firstIngestMark`); from earlier versions, a hash of the
   * ingest request as given (`eventFingerprint`), or '' for an event stored without an id.
   */
  fingerprint: string;
  /** The envelope exactly as sent: signed and replayed byte for byte. */
  envelope: Uint8Array;
  createdAt: number;
  answer: IngestAnswer;
  /** Every delivery of this event: the first one and each replay. */
  deliveryIds: string[];
  /**
   * W3C trace context of the ingest span, kept while tracing is on: the parent of the event's
   * attempt and dead-letter spans, on every node. Absent from events stored without tracing.
   */
  traceparent?: string;
}

export interface AttemptRecord {
  attempt: number;
  at: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  errorCode: string | null;
  responseBody: string;
}

export interface TransitionRecord {
  /** null for the creation of the delivery. */
  from: string | null;
  to: string;
  event: string;
  at: number;
}

/** A delivery's state and context: what its head and its whole record share. */
export interface DeliveryFields {
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  roundAttempts: number;
  /** Attempts in one round: the length of the retry schedule when the round started. */
  roundSize: number;
  nextAttemptAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** The persisted snapshot of one delivery machine: its state, its context and its history (as read). */
export interface DeliveryRecord extends DeliveryFields {
  attemptLog: AttemptRecord[];
  transitions: TransitionRecord[];
}

/**
 * What the `deliveries` table holds for one delivery: its state and context without its history,
 * so that a restart resumes from these alone. The attempt log and the transitions are stored apart,
 * one key each (`[deliveryId, index]`), and appended, never rewritten.
 */
export interface DeliveryHead extends DeliveryFields {
  /** How many transitions and attempts are stored under the delivery's log keys. */
  transitionCount: number;
  attemptCount: number;
}

/**
 * A delivery's value in the status index (`[projectId, status, deliveryId]`): what a restart needs
 * to resume it, so that it reads the index alone, in key order, and no head or record.
 */
export type DeliverySchedule = [nextAttemptAt: number | null, attempts: number, roundAttempts: number, roundSize: number, transitionCount: number, attemptCount: number];

/**
 * One machine step of a delivery, as stored. It names the log indexes its entries take, so that
 * writing it again (after a commit that was never confirmed) lands on the same keys: a step is
 * never logged twice, and no stored record has to be read to tell.
 */
export interface DeliveryChange {
  status: DeliveryStatus;
  attempts: number;
  roundAttempts: number;
  roundSize: number;
  nextAttemptAt: number | null;
  updatedAt: number;
  transitions: TransitionRecord[];
  /** Index of the first of `transitions` in the delivery's transition log. */
  transitionIndex: number;
  attempt?: AttemptRecord;
  /** Index of `attempt` (or, without one, of the next attempt) in the delivery's attempt log. */
  attemptIndex: number;
}

/** An inbound message that could not be accepted (NATS): terminated at the source, kept here. */
export interface RejectedEventRecord {
  id: string;
  projectId: string;
  /** Where it came from, e.g. `nats:hookline.events.default#42` (subject and stream sequence). */
  source: string;
  reason: string;
  message: string;
  details: Array<{ path?: string; message: string }>;
  receivedAt: number;
  /** The first bytes of the payload as text, for diagnosis. */
  payload: string;
}
