/**
 * The zod schema of an outcome's body. Apart from sdk/outcomes.ts because it loads zod, which
 * `@hookline/sdk` does not depend on: `hookline/sdk/nats` loads it only for `consumeOutcomes` and
 * `loadOutcomeSchema` (zod is then the consumer's own, an optional peer dependency).
 */
import { z } from 'zod';
import { OUTCOME_TYPES } from './outcomes.js';
import type { Outcome } from './outcomes.js';

const time = z.string().meta({ format: 'date-time' });

export const outcomeSchema = z
  .object({
    version: z.literal('v1'),
    type: z.enum(OUTCOME_TYPES),
    projectId: z.string(),
    eventId: z.string().nullable(),
    deliveryId: z.string().nullable(),
    eventType: z.string().nullable(),
    status: z.string(),
    attempts: z.number().int().nullable(),
    lastAttempt: z.object({ statusCode: z.number().int().nullable(), error: z.string().nullable(), errorCode: z.string().nullable(), at: time }).nullable(),
    callbackUrl: z.string().nullable(),
    createdAt: time.nullable(),
    occurredAt: time,
  })
  .describe('An outcome Hookline published on NATS: a delivery that succeeded or dead-lettered, or an endpoint change.');

// The schema and the interface describe the same body: a field added to one and not the other fails the build.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agrees: Same<z.output<typeof outcomeSchema>, Outcome> = true;
void agrees;
