import { z } from 'zod';
import { expected, oneOf, strictShape } from '../input-messages.js';
import { nestsAtMost } from '../json-depth.js';
import { EVENT_TYPES, METADATA_KEYS } from '../sdk/types.js';

const metadataShape = Object.fromEntries(METADATA_KEYS.map((key) => [key, z.string({ error: expected('a string') }).optional()])) as Record<(typeof METADATA_KEYS)[number], z.ZodOptional<z.ZodString>>;

/** One of the three reserved event types: an event's `type`, and every filter or subscription by type. */
export const eventTypeInput = oneOf(EVENT_TYPES, 'three reserved event types');

/**
 * The deepest nesting of objects and arrays an event's `data` may have. JSON parsers take any depth,
 * but the code that writes the envelope recurses, and a stack overflow there (at about 4,500
 * levels) answered 500: refused as invalid up front instead. Real payloads are a few levels deep.
 */
export const MAX_DATA_DEPTH = 64;

const EVENT_ID = '"evt_" followed by 1-100 of A-Z a-z 0-9 _ -';

/** An event as producers send it, over HTTP (`POST /v1/events`) or JetStream: one schema for both. */
export const eventInputSchema = strictShape({
  id: z.string({ error: expected(EVENT_ID) }).regex(/^evt_[A-Za-z0-9_-]{1,100}$/, { error: expected(EVENT_ID) }).optional(),
  type: eventTypeInput,
  data: z.record(z.string(), z.unknown(), { error: expected('an object') }).refine((data) => nestsAtMost(data, MAX_DATA_DEPTH), `must not nest objects and arrays more than ${MAX_DATA_DEPTH} deep`),
  // Only the seven keys receivers are promised by the envelope contract (SPEC.md 2.3).
  metadata: strictShape(metadataShape, 'metadata').optional(),
  timestamp: z.iso.datetime({ offset: true, local: false, error: expected('an ISO 8601 date-time with an offset, e.g. 2026-11-21T23:03:49+00:00') }).optional(),
}, 'an event');

export type EventInput = z.infer<typeof eventInputSchema>;
