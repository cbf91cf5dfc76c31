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

function envelopeOf(input: EventInput, eventId: string, nowMs: number) {
  return { version: 'v1', id: eventId, type: input.type, metadata: input.metadata ?? {}, data: input.data, timestamp: envelopeTimestamp(input.timestamp, nowMs) };
}

/** The exact bytes POSTed to the receiver, built once at ingest and signed and replayed as they are. */
export function buildEnvelope(input: EventInput, eventId: string, nowMs: number): Uint8Array {
  return Buffer.from(JSON.stringify(envelopeOf(input, eventId, nowMs)));
}

/** Whether `keys` are in `sort()`'s order already (code units, as `<` compares): no sort, no copy. */
function isSorted(keys: readonly string[]): boolean {
  for (let index = 1; index < keys.length; index++) if (keys[index - 1]! > keys[index]!) return false;
  return true;
}

/**
 * JSON with every object's keys sorted and undefined members left out. One string built in one
 * pass: the map/filter/join of each level copied the payload once per level, and ingest
 * fingerprints every event.
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    // `?? ''`: an item JSON has no text for (undefined) is left empty, as `join` leaves it.
    for (let index = 0; index < value.length; index++) out += (index === 0 ? '' : ',') + (canonicalJson(value[index]) ?? '');
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (!isSorted(keys)) keys.sort();
  let out = '{';
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    out += (out.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(member);
  }
  return out + '}';
}

/**
 * What makes two ingests of one event id "the same event": the request as given, with object keys
 * in canonical order so a producer that re-serialises the same JSON is not told it conflicts.
 * What earlier versions stored with every event (`EventRecord.fingerprint`); a repeat of such an
 * event is still compared with it. This version stores `firstIngestMark` instead.
 */
export function eventFingerprint(input: EventInput): string {
  // Members in sorted order already, so that this level is not sorted again.
  return createHash('sha256').update(canonicalJson({ data: input.data, metadata: input.metadata ?? {}, timestamp: input.timestamp ?? null, type: input.type })).digest('base64url');
}

/** Starts `firstIngestMark`; never the first character of a fingerprint (base64url) or of ''. */
const MARK = '~';

/**
 * What this version stores as an event's `fingerprint`: the one thing about the first ingest its
 * envelope does not tell, the timestamp as the producer gave it (`~` alone: none given). With the
 * envelope it decides a repeat exactly as `eventFingerprint` did (`isRepeatOf`), and it costs
 * nothing at ingest: the fingerprint's canonical JSON and SHA-256 were 4.8% of a node's busy time,
 * for every event, to serve the rare one whose id comes again.
 */
export function firstIngestMark(input: EventInput): string {
  return MARK + (input.timestamp ?? '');
}

/** The first ingest of an event as it is stored: its envelope and mark. */
export function firstIngestOf(input: EventInput, eventId: string, nowMs: number): FirstIngest {
  return { fingerprint: firstIngestMark(input), envelope: buildEnvelope(input, eventId, nowMs) };
}

/** What a repeat is compared with: the first ingest of the id, as stored (or still being stored). */
export interface FirstIngest {
  /** `firstIngestMark`, or from earlier versions `eventFingerprint` ('' for events stored without an id). */
  readonly fingerprint: string;
  /** The envelope the first ingest made. */
  readonly envelope: Uint8Array;
}

/**
 * Whether `input`, sent under the id of an event already taken, is that event again (a repeat, to
 * be answered as the first was) rather than another event reusing the id (a conflict). It is when
 * it is the same request (the fingerprint), or when it asks for the very envelope already made: a
 * producer that sends again what it was delivered spells out the timestamp the server made for an
 * event sent without one, and `+00:00` for the `Z` it sent. Events stored without an id by earlier
 * versions have an empty fingerprint; for them, a repeat without a timestamp takes the stored one.
 */
export function isRepeatOf(input: EventInput, first: FirstIngest): boolean {
  if (first.fingerprint.startsWith(MARK)) return isRepeatOfMarked(input, first.fingerprint.slice(MARK.length), first.envelope);
  if (eventFingerprint(input) === first.fingerprint) return true;
  if (input.timestamp === undefined && first.fingerprint !== '') return false;
  const stored = JSON.parse(Buffer.from(first.envelope).toString('utf8')) as { id: string; timestamp: string };
  const asked = envelopeOf(input, stored.id, 0);
  if (input.timestamp === undefined) asked.timestamp = stored.timestamp;
  return canonicalJson(asked) === canonicalJson(stored);
}

/**
 * `isRepeatOf` for a first ingest stored with `firstIngestMark` (`givenTimestamp`: '' when none was
 * given): the same request as given (what the fingerprint compared), or a request for the very
 * envelope already made. Either way type, data and metadata are the same, keys in any order.
 */
function isRepeatOfMarked(input: EventInput, givenTimestamp: string, envelope: Uint8Array): boolean {
  const stored = JSON.parse(Buffer.from(envelope).toString('utf8')) as { type: string; metadata: unknown; data: unknown; timestamp: string };
  if (input.timestamp === undefined) {
    // The same request only if the first gave none either: the server's timestamp is not the producer's.
    if (givenTimestamp !== '') return false;
  } else if (input.timestamp !== givenTimestamp && withNumericOffset(input.timestamp) !== stored.timestamp) {
    return false;
  }
  return input.type === stored.type && canonicalJson(input.metadata ?? {}) === canonicalJson(stored.metadata) && canonicalJson(input.data) === canonicalJson(stored.data);
}
