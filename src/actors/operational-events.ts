/**
 * Operational webhooks: Hookline's own events about a project (its endpoint disabled or recovered,
 * its circuit breaker opened or closed, a delivery dead-lettered), sent to the project's `operationalUrl` signed with its operational
 * secret, and delivered and retried by the same engine as the project's events.
 *
 * They are kept apart from the project's events under a companion store id, `<projectId>~ops`, so
 * that the delivery log, stats and redrive of the project never see them; the companion id hashes to
 * the project's cluster partition (sdk/partition.ts), so they travel with the project.
 */
import { z } from 'zod';
import { isoTime } from '../iso-time.js';

const time = z.string().meta({ format: 'date-time' });
const callbackUrl = z.string().describe('The endpoint\'s `callbackUrl`, its password (or a username alone) shown as `***`.');

/** What each operational event's `data` holds: the project, and the endpoint or delivery concerned. */
const OPERATIONAL_EVENT_DATA = {
  'hookline.endpoint.disabled': z
    .strictObject({ projectId: z.string(), callbackUrl, reason: z.string(), disabledAt: time })
    .describe('The endpoint was disabled: it answered 410 Gone, or every attempt failed for HOOKLINE_DISABLE_AFTER.'),
  'hookline.endpoint.recovered': z
    .strictObject({ projectId: z.string(), callbackUrl, recoveredAt: time })
    .describe('The first successful attempt after failed ones, or after the endpoint was disabled.'),
  'hookline.endpoint.circuit_opened': z
    .strictObject({ projectId: z.string(), callbackUrl, consecutiveFailures: z.number().int(), openedAt: time, nextProbeAt: time })
    .describe('The endpoint\'s circuit breaker opened after HOOKLINE_CIRCUIT_FAILURES failures in a row: due attempts are failed unsent while one probe at a time tests the endpoint.'),
  'hookline.endpoint.circuit_closed': z
    .strictObject({ projectId: z.string(), callbackUrl, openedAt: time, closedAt: time })
    .describe('The endpoint\'s circuit breaker closed again (a probe succeeded or the endpoint answered, or the webhook was configured): due attempts are sent again.'),
  'hookline.delivery.dead_lettered': z
    .strictObject({ projectId: z.string(), deliveryId: z.string(), eventId: z.string(), eventType: z.string(), attempts: z.number().int(), deadLetteredAt: time })
    .describe('A delivery of the project dead-lettered.'),
};

export type OperationalEventType = keyof typeof OPERATIONAL_EVENT_DATA;
export type OperationalEventData = { [Type in OperationalEventType]: z.output<(typeof OPERATIONAL_EVENT_DATA)[Type]> };

/** The body of an operational delivery, as the OpenAPI document's `webhooks` describes it. */
export const operationalEventSchema = z
  .union(
    (Object.keys(OPERATIONAL_EVENT_DATA) as OperationalEventType[]).map((type) =>
      z.strictObject({ version: z.literal('v1'), id: z.string().regex(/^evt_/), type: z.literal(type), data: OPERATIONAL_EVENT_DATA[type], timestamp: time }),
    ) as unknown as readonly [z.ZodObject, z.ZodObject, z.ZodObject],
  )
  .describe('An operational event: Hookline reporting on the project to its `operationalUrl`.');

/** Raises an operational event for the project (dropped when no `operationalUrl` is set). */
export type OperationalNotify = <Type extends OperationalEventType>(type: Type, data: OperationalEventData[Type]) => void;

const OPERATIONAL_SUFFIX = '~ops';

/** The store id of a project's operational events and deliveries. */
export function operationalStoreId(projectId: string): string {
  return `${projectId}${OPERATIONAL_SUFFIX}`;
}

/** The project a store id belongs to: itself, or the project of an operational store id. */
export function projectOfStoreId(storeId: string): string {
  return storeId.endsWith(OPERATIONAL_SUFFIX) ? storeId.slice(0, -OPERATIONAL_SUFFIX.length) : storeId;
}

/** The body of an operational delivery: `{version, id, type, data, timestamp}` as exact bytes. */
export function operationalEnvelope(id: string, type: OperationalEventType, data: object, now: number): Uint8Array {
  return Buffer.from(JSON.stringify({ version: 'v1', id, type, data, timestamp: isoTime(now) }));
}
