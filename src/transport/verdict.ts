/**
 * Hookline's verdict on an event that arrived over JetStream, published on core NATS so that the
 * producer can learn it: JetStream's own ack only says the stream stored the message, not whether
 * Hookline took the event (an unknown project, a failed validation or an id conflict is found only
 * when Hookline consumes it).
 *
 * The subject is `_HOOKLINE.verdicts.<subject prefix>.<event id>`. It is derived from the event id,
 * so a producer subscribes to it before publishing and needs no reply subject in the message; it
 * starts with its own token, so no stream taking `<subject prefix>.>` ever stores a verdict. A
 * verdict is sent once the outcome is final: after the ack (the event is committed) or after the
 * term (the rejection is recorded); a nak'ed message (a transient failure) gets its verdict on the
 * redelivery that settles it. Nobody listening is harmless: core NATS drops it.
 */
import { z } from 'zod';

/** The first tokens of every verdict subject. */
const VERDICT_SUBJECT_ROOT = '_HOOKLINE.verdicts';

/** An id that can stand as one subject token; only such ids get a verdict (no dots, wildcards, spaces). */
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Where verdicts for events published under `subjectPrefix` go (the single node's
 * HOOKLINE_NATS_SUBJECT_PREFIX; a cluster's, without the partition token).
 */
export function verdictSubjectPrefix(subjectPrefix: string): string {
  return `${VERDICT_SUBJECT_ROOT}.${subjectPrefix}`;
}

/** The verdict subject of one event, or null when its id cannot be a subject token. */
export function verdictSubject(verdictPrefix: string, eventId: string): string | null {
  return SUBJECT_TOKEN.test(eventId) ? `${verdictPrefix}.${eventId}` : null;
}

export const verdictSchema = z.discriminatedUnion('verdict', [
  z.object({
    verdict: z.literal('accepted'),
    id: z.string(),
    projectId: z.string(),
    /** The delivery made for it; null when it matched no webhook (stored, not delivered). */
    deliveryId: z.string().nullable(),
    /** True when the id was accepted before with the same body: nothing new was stored. */
    duplicate: z.boolean(),
  }),
  z.object({
    verdict: z.literal('rejected'),
    id: z.string(),
    projectId: z.string(),
    /** The rejected-events log's reason: `unknown_project`, `validation_failed`, `event_id_conflict`, `invalid_json`. */
    reason: z.string(),
    message: z.string(),
  }),
]);

export type EventVerdict = z.infer<typeof verdictSchema>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeVerdict(verdict: EventVerdict): Uint8Array {
  return encoder.encode(JSON.stringify(verdict));
}

/** The verdict in a message's payload, or null when it is not one (any client may publish there). */
export function decodeVerdict(payload: Uint8Array): EventVerdict | null {
  try {
    const parsed = verdictSchema.safeParse(JSON.parse(decoder.decode(payload)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
