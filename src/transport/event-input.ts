import { z } from 'zod';
import { EVENT_TYPES, METADATA_KEYS } from '../sdk/types.js';

const metadataShape = Object.fromEntries(METADATA_KEYS.map((key) => [key, z.string().optional()])) as Record<(typeof METADATA_KEYS)[number], z.ZodOptional<z.ZodString>>;

/** An event as producers send it, over HTTP (`POST /v1/events`) or JetStream: one schema for both. */
export const eventInputSchema = z.strictObject({
  id: z.string().regex(/^evt_[A-Za-z0-9_-]{1,100}$/, 'must be "evt_" followed by 1-100 of A-Z a-z 0-9 _ -').optional(),
  type: z.enum(EVENT_TYPES),
  data: z.record(z.string(), z.unknown()),
  metadata: z.strictObject(metadataShape).optional(),
  timestamp: z.iso.datetime({ offset: true, local: false }).optional(),
});

export type EventInput = z.infer<typeof eventInputSchema>;
