/**
 * Outcomes on NATS (HOOKLINE_NATS_OUTCOMES=1): each final outcome of a delivery and each change of
 * a project's endpoint, published by Hookline on `<root>.outcomes.<projectId>.<type>`. Shared by
 * the server, which publishes them, and `hookline/sdk/nats`, whose consumers read them.
 */
import { z } from 'zod';

export const OUTCOME_TYPES = ['succeeded', 'dead_lettered', 'endpoint_disabled', 'endpoint_recovered', 'circuit_opened', 'circuit_closed'] as const;
export type OutcomeType = (typeof OUTCOME_TYPES)[number];

const time = z.string().meta({ format: 'date-time' });

/** The body of an outcome message (JSON). Delivery fields are null for an endpoint's changes. */
export const outcomeSchema = z
  .object({
    version: z.literal('v1'),
    type: z.enum(OUTCOME_TYPES),
    projectId: z.string(),
    eventId: z.string().nullable(),
    deliveryId: z.string().nullable(),
    eventType: z.string().nullable(),
    /** The delivery's status (`succeeded`, `dead_lettered`), or the endpoint's (`disabled`, `active`) or circuit's (`open`, `closed`). */
    status: z.string(),
    /** The delivery's attempts over all its rounds; null for an endpoint's changes. */
    attempts: z.number().int().nullable(),
    /** The attempt that ended the delivery: its HTTP status (null without an answer) and error. */
    lastAttempt: z.object({ statusCode: z.number().int().nullable(), error: z.string().nullable(), errorCode: z.string().nullable(), at: time }).nullable(),
    /** The endpoint concerned by an endpoint change, its password shown as `***`; null for deliveries. */
    callbackUrl: z.string().nullable(),
    /** When the delivery was created; null for an endpoint's changes. */
    createdAt: time.nullable(),
    /** When the outcome or the change happened. */
    occurredAt: time,
  })
  .describe('An outcome Hookline published on NATS: a delivery that succeeded or dead-lettered, or an endpoint change.');

export type Outcome = z.output<typeof outcomeSchema>;

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
