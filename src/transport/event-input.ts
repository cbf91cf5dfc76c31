import { z } from 'zod';
import { oneOf, strictShape } from '../input-messages.js';
import { EVENT_TYPES, METADATA_KEYS } from '../sdk/types.js';

const metadataShape = Object.fromEntries(METADATA_KEYS.map((key) => [key, z.string().optional()])) as Record<(typeof METADATA_KEYS)[number], z.ZodOptional<z.ZodString>>;

/** One of the three reserved event types: an event's `type`, and every filter or subscription by type. */
export const eventTypeInput = oneOf(EVENT_TYPES, 'three reserved event types');

/** An event as producers send it, over HTTP (`POST /v1/events`) or JetStream: one schema for both. */
export const eventInputSchema = strictShape({
  id: z.string().regex(/^evt_[A-Za-z0-9_-]{1,100}$/, 'must be "evt_" followed by 1-100 of A-Z a-z 0-9 _ -').optional(),
  type: eventTypeInput,
  data: z.record(z.string(), z.unknown()),
  // Only the seven keys receivers are promised by the envelope contract (SPEC.md 2.3).
  metadata: strictShape(metadataShape, 'metadata').optional(),
  timestamp: z.iso.datetime({ offset: true, local: false }).optional(),
}, 'an event');

export type EventInput = z.infer<typeof eventInputSchema>;
