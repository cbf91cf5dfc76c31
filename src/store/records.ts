import type { DeliveryStatus } from '../machines/index.js';
import type { EventType } from '../sdk/types.js';

/**
 * What Hookline keeps in LMDB. Times are milliseconds since the epoch; the HTTP layer renders them
 * as ISO 8601. Every key begins with the project id, so a project is one contiguous key range.
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
  disabledAt: number | null;
  disabledReason: string | null;
}

export interface IngestAnswer {
  id: string;
  deliveryId: string | null;
}

export interface EventRecord {
  id: string;
  type: EventType;
  /** Hash of the ingest request as given, to tell a harmless repeat from a conflicting reuse of the id. */
  fingerprint: string;
  /** The envelope exactly as sent: signed and replayed byte for byte. */
  envelope: Uint8Array;
  createdAt: number;
  answer: IngestAnswer;
  /** Every delivery of this event: the first one and each replay. */
  deliveryIds: string[];
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

/** The persisted snapshot of one delivery machine: its state, its context and its history. */
export interface DeliveryRecord {
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
  attemptLog: AttemptRecord[];
  transitions: TransitionRecord[];
}

/** A change to a delivery, applied to the stored record inside a write transaction. */
export interface DeliveryChange {
  status: DeliveryStatus;
  attempts: number;
  roundAttempts: number;
  roundSize: number;
  nextAttemptAt: number | null;
  updatedAt: number;
  transitions: TransitionRecord[];
  attempt?: AttemptRecord;
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
