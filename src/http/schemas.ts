import { z } from 'zod';
import { HooklineError } from '../errors.js';
import { DELIVERY_STATUSES } from '../machines/index.js';
import { EVENT_TYPES } from '../sdk/types.js';

/** Parses `value` with `schema`, or throws a 400 naming every problem and where it is. */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: 'body' | 'query' | 'params'): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({ path: [where, ...issue.path.map(String)].join('.'), message: issue.message }));
  throw new HooklineError('HOOKLINE_ERR_VALIDATION', `invalid ${where}: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
}

const isoDateTime = z.iso.datetime({ offset: true, local: false });
const isoToMs = isoDateTime.transform((text) => Date.parse(text));

export const configureWebhookBody = z.strictObject({
  callbackUrl: z.url({ protocol: /^https?$/, error: 'must be an absolute http or https URL' }).max(2048),
  status: z.enum(['active', 'paused']),
  eventTypes: z.array(z.enum(EVENT_TYPES)).min(1, 'must list at least one event type'),
});

export const rotateSecretBody = z
  .strictObject({ graceSeconds: z.number().int().min(0).max(30 * 24 * 3600).optional() })
  .optional()
  .transform((body) => ({ graceSeconds: body?.graceSeconds ?? 86_400 }));

export const deliveryListQuery = z.strictObject({
  status: z.enum(DELIVERY_STATUSES).optional(),
  eventType: z.enum(EVENT_TYPES).optional(),
  eventId: z.string().min(1).max(200).optional(),
  since: isoToMs.optional(),
  until: isoToMs.optional(),
  limit: z.coerce.number().int().min(1).max(250).default(50),
  cursor: z.string().regex(/^dlv_[0-9A-Z]{26}$/, 'must be a nextCursor from a previous page').optional(),
});

export const redriveBody = z
  .strictObject({ since: isoToMs.optional(), until: isoToMs.optional(), eventType: z.enum(EVENT_TYPES).optional(), dryRun: z.boolean().optional() })
  .optional()
  .transform((body) => body ?? {});

export const deliveryIdParams = z.object({ id: z.string().min(1).max(200) });
export const eventIdParams = z.object({ eventId: z.string().min(1).max(200) });

export const createProjectBody = z.strictObject({ name: z.string().trim().min(1).max(100) });

export const rejectedEventsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(250).default(50),
  cursor: z.string().regex(/^rej_[0-9A-Z]{26}$/, 'must be a nextCursor from a previous page').optional(),
});
