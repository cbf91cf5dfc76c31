/**
 * Outcomes on NATS (HOOKLINE_NATS_OUTCOMES=1): each final outcome of a delivery and each change of
 * a project's endpoint, published by Hookline on `<root>.outcomes.<projectId>.<type>`. Shared by
 * the server, which publishes them, and `hookline/sdk/nats`, whose consumers read them. Without
 * zod: the SDK has no runtime dependency, and zod is loaded only by `consumeOutcomes`.
 */
export const OUTCOME_TYPES = ['succeeded', 'dead_lettered', 'endpoint_disabled', 'endpoint_recovered', 'circuit_opened', 'circuit_closed'] as const;
export type OutcomeType = (typeof OUTCOME_TYPES)[number];

/**
 * The body of an outcome message (JSON); `outcomeSchema` (sdk/outcome-schema.ts) validates it.
 * Delivery fields are null for an endpoint's changes, the endpoint's for a delivery's outcome.
 */
export interface Outcome {
  version: 'v1';
  type: OutcomeType;
  projectId: string;
  eventId: string | null;
  deliveryId: string | null;
  eventType: string | null;
  /** The delivery's status (`succeeded`, `dead_lettered`), or the endpoint's (`disabled`, `active`) or its circuit's (`open`, `closed`). */
  status: string;
  /** The delivery's attempts over all its rounds; null for an endpoint's changes. */
  attempts: number | null;
  /** The attempt that ended the delivery: its HTTP status (null without an answer), error and error class, and start time. */
  lastAttempt: { statusCode: number | null; error: string | null; errorCode: string | null; at: string } | null;
  /** The endpoint of an endpoint change, its password shown as `***`; null for a delivery's outcome. */
  callbackUrl: string | null;
  /** When the delivery was created; null for an endpoint's changes. */
  createdAt: string | null;
  /** When the outcome or the change happened (ISO 8601). */
  occurredAt: string;
}

/**
 * The root of outcome subjects for a HOOKLINE_NATS_SUBJECT_PREFIX: the prefix without its last
 * token (`hookline.events` gives `hookline`), so outcomes sit beside events, not under them; a
 * one-token prefix is its own root.
 */
export function outcomeSubjectRoot(subjectPrefix: string): string {
  const dot = subjectPrefix.lastIndexOf('.');
  return dot > 0 ? subjectPrefix.slice(0, dot) : subjectPrefix;
}

/** `<root>.outcomes.<projectId>.<type>`; `*` for the project or the type matches every one. */
export function outcomeSubject(root: string, projectId: string, type: OutcomeType | '*'): string {
  return `${root}.outcomes.${projectId}.${type}`;
}

/** The stream Hookline keeps outcomes in, beside its events stream (HOOKLINE_NATS_STREAM). */
export function outcomeStreamName(eventsStream: string): string {
  return `${eventsStream}_OUTCOMES`;
}
