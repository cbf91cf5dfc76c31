import { createHash } from 'node:crypto';
import { isoTime, withNumericOffset } from '../iso-time.js';
import type { EventInput } from '../transport/event-input.js';

/**
 * ISO 8601 with a numeric offset, as the envelope requires: `Z` becomes `+00:00`; an offset given by
 * the producer is kept as given.
 */
export function envelopeTimestamp(given: string | undefined, nowMs: number): string {
  return given === undefined ? isoTime(nowMs) : withNumericOffset(given);
}

/** The exact bytes POSTed to the receiver, built once at ingest and signed and replayed as they are. */
export function buildEnvelope(input: EventInput, eventId: string, nowMs: number): Uint8Array {
  const envelope = {
    version: 'v1',
    id: eventId,
    type: input.type,
    metadata: input.metadata ?? {},
    data: input.data,
    timestamp: envelopeTimestamp(input.timestamp, nowMs),
  };
  return Buffer.from(JSON.stringify(envelope));
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What makes two ingests of one event id "the same event": the request as given, with object keys
 * in canonical order so a producer that re-serialises the same JSON is not told it conflicts.
 */
export function eventFingerprint(input: EventInput): string {
  return createHash('sha256').update(canonicalJson({ type: input.type, data: input.data, metadata: input.metadata ?? {}, timestamp: input.timestamp ?? null })).digest('base64url');
}
