import { z } from 'zod';
import { ERROR_CODES } from '../errors.js';
import { CIRCUIT_STATES } from '../actors/circuit-breaker.js';
import { DELIVERY_STATUSES } from '../machines/index.js';
import { EVENT_TYPES } from '../sdk/types.js';

/**
 * What the API answers, in zod: the OpenAPI document is generated from these, and the presenters in
 * present.ts are typed by them, so the code, the document and the tests that check real answers
 * against the document share one definition. Objects are strict so that a field added to an answer
 * without being documented fails those tests.
 */

/** Every time the API writes: ISO 8601 with a numeric offset, never `Z`. */
export const apiTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/)
  .meta({ format: 'date-time' });
const deliveryId = z.string().regex(/^dlv_[0-9A-Z]{26}$/);
const eventId = z.string().regex(/^evt_[A-Za-z0-9_-]+$/);
const secret = z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/);
const eventType = z.enum(EVENT_TYPES);
const deliveryStatus = z.enum(DELIVERY_STATUSES);
/** A delivery machine state as `transitions` records it: the statuses plus the transient `failed`. */
const machineState = z.enum([...DELIVERY_STATUSES, 'failed']);

export const errorResponse = z
  .strictObject({
    error: z.strictObject({
      code: z.enum([...new Set(Object.values(ERROR_CODES).map((entry) => entry.apiCode))] as [string, ...string[]]),
      message: z.string(),
      details: z.array(z.looseObject({ path: z.string().optional(), message: z.string(), reqId: z.string().optional() })).describe('Each problem, with where it is (`body.eventTypes.0`) for validation errors; may be empty. A 5xx answer\'s first names the request id (`reqId`).'),
    }),
  })
  .describe('Every error answer. `code` is stable; branch on it, not on `message`.');

export const webhookConfigResponse = z
  .strictObject({
    callbackUrl: z.string().describe('As set, credentials included (operational events show the password as `***`).'),
    status: z.enum(['active', 'paused', 'disabled']).describe('`disabled` is set by Hookline after HOOKLINE_DISABLE_AFTER of failures; PUT `active` to resume.'),
    eventTypes: z.array(eventType),
    disabledReason: z.string().nullable().describe('Why Hookline disabled the endpoint (`the endpoint answered 410 Gone`, or every attempt failing for HOOKLINE_DISABLE_AFTER); `null` unless `status` is `disabled`.'),
    headers: z.record(z.string(), z.string()).describe('Sent with every delivery, as set; `{}` when none.'),
    filter: z.record(z.string(), z.unknown()).nullable().describe('The payload filter as set; `null` when every event of `eventTypes` is delivered.'),
    ordering: z.enum(['unordered', 'fifo']),
    operationalUrl: z.string().nullable().describe('Where operational events go; `null` when none.'),
    maxConcurrency: z.number().int().min(1).nullable().describe('Attempts in flight to the endpoint at most, as set; `null`: the node\'s HOOKLINE_ENDPOINT_CONCURRENCY alone.'),
    rateLimitPerSecond: z.number().int().min(1).nullable().describe('Attempts started per second at most, as set; `null`: no pacing.'),
    retrySchedule: z.string().nullable().describe('The project\'s retry schedule as set, each delay in its largest whole unit (`0,90s,2h`); `null`: the node\'s HOOKLINE_RETRY_SCHEDULE.'),
    sendTraceparent: z.boolean().describe('Whether each attempt carries its span\'s W3C `traceparent` header (not signed), while the node exports traces.'),
    circuit: z
      .strictObject({
        state: z.enum(CIRCUIT_STATES).describe('`closed`: attempts are sent. `open`: due attempts are failed unsent (`errorCode` `circuit_open`) until `nextProbeAt`. `half_open`: one probe is in flight.'),
        consecutiveFailures: z.number().int().min(0).describe('Failures in a row (no answer, 5xx, 429) of attempts that were sent.'),
        openedAt: apiTime.nullable().describe('When it opened; `null` while closed.'),
        nextProbeAt: apiTime.nullable().describe('From when the next due attempt is sent as the probe; `null` while closed.'),
      })
      .describe('The endpoint\'s circuit breaker (HOOKLINE_CIRCUIT_FAILURES), as the node serving the project holds it in memory: closed after a restart or a partition move.'),
    createdAt: apiTime,
    updatedAt: apiTime,
  });

export const webhookSecretResponse = z.strictObject({ secret: secret, operationalSecret: secret.optional().describe('Signs the operational events; present while `operationalUrl` is set.') });

export const rotatedSecretResponse = z
  .strictObject({ secret: secret, previousSecretExpiresAt: apiTime.describe('Until then the previous secret signs too.') });

export const eventAcceptedResponse = z
  .strictObject({ id: eventId, deliveryId: deliveryId.nullable().describe('`null` when no webhook is configured or the type is not subscribed.') });

/** One event of a batch: accepted (202) or a repeat (200) with the single ingest's answer, or refused. */
const batchItemResponse = z.union([
  eventAcceptedResponse.extend({ status: z.union([z.literal(202), z.literal(200)]).describe('202 stored now, 200 a repeat of an id with the same body (the first answer).') }),
  z.strictObject({ status: z.number().int().min(400).max(599).describe('The status `POST /v1/events` would have answered for this event alone.'), error: errorResponse.shape.error }),
]);

export const eventBatchResponse = z
  .strictObject({ data: z.array(batchItemResponse).describe('One answer per event, in request order.') });

const lastAttempt = z.strictObject({
  at: apiTime,
  statusCode: z.number().int().nullable().describe('`null` when no response came back (timeout, network error).'),
  durationMs: z.number(),
  error: z.string().nullable(),
});

export const deliveryResponse = z
  .strictObject({
    id: deliveryId,
    eventId,
    eventType,
    status: deliveryStatus,
    attempts: z.number().int().min(0).describe('Every attempt so far, across retry and redrive rounds.'),
    maxAttempts: z.number().int().min(0).describe('The attempt count at which the current round dead-letters.'),
    nextAttemptAt: apiTime.nullable(),
    createdAt: apiTime,
    updatedAt: apiTime,
    lastAttempt: lastAttempt.nullable().describe('`null` before the first attempt.'),
  });

export const deliveryDetailResponse = deliveryResponse
  .extend({
    attemptLog: z.array(
      lastAttempt.extend({
        attempt: z.number().int().min(1),
        errorCode: z.string().nullable().describe('Stable class of a failure (`http_status`, `timeout`, `connection_refused`, ...; `circuit_open` for an attempt failed unsent while the endpoint\'s circuit was open); `null` on success.'),
        responseBody: z.string().describe("The first 1 KB of the receiver's answer as text."),
      }),
    ),
    transitions: z.array(z.strictObject({ from: machineState.nullable(), to: machineState, event: z.string(), at: apiTime })),
  });

export const deliveryPageResponse = z
  .strictObject({ data: z.array(deliveryResponse), nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; `null` on the last page.') });

export const storedEventResponse = z
  .strictObject({
    id: eventId,
    type: eventType,
    createdAt: apiTime.describe('When Hookline accepted the event.'),
    payload: z.record(z.string(), z.unknown()).describe('The envelope Hookline signs and sends for this event, parsed.'),
    body: z.string().describe('The same envelope as the exact text Hookline signs and sends (its UTF-8 bytes are the request body): for tools that need the bytes, such as `hookline fuzz --corpus URL`.'),
  });

export const eventPageResponse = z
  .strictObject({ data: z.array(storedEventResponse), nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; `null` on the last page.') });

export const redriveResponse = z.strictObject({ redriven: z.number().int().min(0) });

export const redriveDryRunResponse = z.strictObject({
  redriven: z.literal(0),
  wouldRedrive: z.number().int().min(0).describe('How many dead letters a redrive with this filter would start now.'),
  fits: z
    .boolean()
    .optional()
    .describe('Whether they fit in the room HOOKLINE_MAX_WAITING_PER_PROJECT leaves the project now; a redrive that does not fit is refused whole (503 `overloaded`). Always sent by this version; older ones leave it out.'),
});

export const replayResponse = z.strictObject({ deliveryId });

export const deliveryStateCountsResponse = z
  .strictObject({ counts: z.strictObject(Object.fromEntries(DELIVERY_STATUSES.map((status) => [status, z.number().int().min(0)])) as Record<(typeof DELIVERY_STATUSES)[number], z.ZodNumber>) });

const rejectedEvent = z.strictObject({
  id: z.string().regex(/^rej_[0-9A-Z]{26}$/),
  projectId: z.string(),
  source: z.string().describe('Where it came from, e.g. `nats:hookline.events.default#42` (subject and stream sequence).'),
  reason: z.string(),
  message: z.string(),
  details: z.array(z.looseObject({ path: z.string().optional(), message: z.string() })),
  receivedAt: apiTime,
  payload: z.string().describe('The first bytes of the payload as text.'),
});

export const rejectedEventPageResponse = z.strictObject({ data: z.array(rejectedEvent), nextCursor: z.string().nullable() });

export const projectCreatedResponse = z
  .strictObject({ projectId: z.string(), apiKey: z.string().describe('Shown once; Hookline stores only its hash.') });

export const healthResponse = z
  .strictObject({
    status: z.literal('ok'),
    cluster: z.strictObject({ nodeId: z.string(), partitions: z.array(z.number().int()), partitionCount: z.number().int() }).optional().describe("Cluster mode: this node's id and the partitions it serves."),
  });


export const readyResponse = z.strictObject({ status: z.literal('ready') });

export const notReadyResponse = z
  .strictObject({
    status: z.enum(['starting', 'draining', 'unavailable']),
    reason: z.string().optional().describe('With `unavailable`: what stopped the node and what to fix.'),
  })
  .describe('`starting` until the node listens, `draining` once it is shutting down, `unavailable` while it runs but cannot do its job (its NATS connection ended for good: restart it once the cause is fixed).');

export type WebhookConfigResponse = z.output<typeof webhookConfigResponse>;
export type WebhookSecretResponse = z.output<typeof webhookSecretResponse>;
export type RotatedSecretResponse = z.output<typeof rotatedSecretResponse>;
export type EventAcceptedResponse = z.output<typeof eventAcceptedResponse>;
export type EventBatchResponse = z.output<typeof eventBatchResponse>;
export type RedriveResponse = z.output<typeof redriveResponse>;
export type RedriveDryRunResponse = z.output<typeof redriveDryRunResponse>;
export type ReplayResponse = z.output<typeof replayResponse>;
export type DeliveryStateCountsResponse = z.output<typeof deliveryStateCountsResponse>;
export type DeliveryPageResponse = z.output<typeof deliveryPageResponse>;
export type StoredEventResponse = z.output<typeof storedEventResponse>;
export type EventPageResponse = z.output<typeof eventPageResponse>;
export type RejectedEventPageResponse = z.output<typeof rejectedEventPageResponse>;
export type ProjectCreatedResponse = z.output<typeof projectCreatedResponse>;
export type DeliveryResponse = z.output<typeof deliveryResponse>;
export type DeliveryDetailResponse = z.output<typeof deliveryDetailResponse>;
