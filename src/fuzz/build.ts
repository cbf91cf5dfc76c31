import { createHmac } from 'node:crypto';
import { EVENT_TYPES } from '../sdk/types.js';
import { deliveryHeadersWithContentType } from '../signing/delivery-headers.js';
import type { EventType } from '../sdk/types.js';
import { spellJson } from './json-style.js';
import type { Base64Damage, DeliveryDraft, FuzzCase, Tamper } from './cases.js';
import { splitsInsideCharacters } from './text.js';

/** One HTTP request of the fuzzer: the headers (a real delivery's, see deliveryHeadersWithContentType), the body bytes and how they are written. */
export interface FuzzRequest {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** @default one write, with content-length */
  readonly transfer?: { readonly framing: 'content-length' | 'chunked'; readonly splits: readonly number[] };
}

/** The requests of one case, sent in turn or all at once. */
export interface FuzzExchange {
  readonly requests: readonly FuzzRequest[];
  readonly concurrent: boolean;
}

export interface BuildContext {
  /** The HMAC key of the receiver's secret (the decoded `whsec_` part). */
  readonly key: Uint8Array;
  /** The `webhook-id` of this request, unique within the run. */
  readonly webhookId: string;
  /** Now, in Unix seconds. */
  readonly nowSeconds: number;
  readonly toleranceSeconds: number;
  readonly maxBodyBytes: number;
  /** The largest body Hookline delivers: cases expecting a 2xx stay within it as within maxBodyBytes. @default no bound but maxBodyBytes */
  readonly largestDeliveryBytes?: number;
  /** Real envelopes to build bodies from instead of generated ones (`--corpus`). */
  readonly corpus?: readonly Uint8Array[];
  /** Unsigned headers sent with every request, as a webhook's `headers` are with its deliveries (`--header`). @default none */
  readonly customHeaders?: Readonly<Record<string, string>>;
}

/** How far beyond the tolerance stale and future timestamps start, for clocks a little apart. */
export const TIMESTAMP_MARGIN_SECONDS = 10;

const encoder = new TextEncoder();

function sign(key: Uint8Array, id: string, timestamp: string, body: Uint8Array): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

type Overrides = { id?: string; type?: string; data?: Record<string, unknown> };
type Envelope = { id: unknown; type: unknown; data: Record<string, unknown> } & Record<string, unknown>;

/** A corpus event, parsed; null when there is no corpus or the entry is not a JSON object. */
function corpusEnvelope(delivery: DeliveryDraft, corpus: readonly Uint8Array[] | undefined): { bytes: Uint8Array; value: Envelope } | null {
  if (!corpus || corpus.length === 0) return null;
  const bytes = corpus[delivery.corpusPick % corpus.length]!;
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    const data = (value as { data?: unknown }).data;
    return { bytes, value: { ...(value as Envelope), data: data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {} } };
  } catch {
    return null;
  }
}

function envelopeOf(delivery: DeliveryDraft, overrides: Overrides = {}, corpus?: readonly Uint8Array[]): Envelope {
  const real = corpusEnvelope(delivery, corpus)?.value;
  const base: Envelope = real ?? { version: 'v1', id: delivery.eventId, type: delivery.eventType, metadata: delivery.metadata, data: delivery.data, timestamp: delivery.eventTime };
  return { ...base, ...(overrides.id !== undefined ? { id: overrides.id } : {}), ...(overrides.type !== undefined ? { type: overrides.type } : {}), ...(overrides.data !== undefined ? { data: overrides.data } : {}) };
}

/** An envelope spelled as Hookline spells it (JSON.stringify, src/actors/envelope.ts). */
const bodyOf = (envelope: unknown): Uint8Array => encoder.encode(spellJson(envelope, 'compact'));

/** The body a delivery is signed over: a corpus event byte for byte (as Hookline sent it) unless its data is replaced. */
function deliveryBody(delivery: DeliveryDraft, corpus: readonly Uint8Array[] | undefined, data?: Record<string, unknown>): Uint8Array {
  const real = corpusEnvelope(delivery, corpus);
  if (real && data === undefined) return real.bytes;
  return bodyOf(envelopeOf(delivery, data === undefined ? {} : { data }, corpus));
}
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((byte, index) => byte === b[index]);
const nextOf = <T>(list: readonly T[], value: T): T => list[(list.indexOf(value) + 1) % list.length]!;

/** The type a tampered body gets: the case's, or the next one when it is the delivery's own. */
export const tamperedTypeOf = (own: EventType, wanted: EventType): EventType => (wanted === own ? nextOf(EVENT_TYPES, wanted) : wanted);

function tamperedBody(delivery: DeliveryDraft, original: Uint8Array, tamper: Tamper, corpus?: readonly Uint8Array[]): Uint8Array {
  let body: Uint8Array;
  switch (tamper.how) {
    case 'byte':
      body = Uint8Array.from(original);
      body[tamper.position % body.length] = body[tamper.position % body.length]! ^ tamper.flip;
      return body;
    case 'data':
      body = bodyOf(envelopeOf(delivery, { data: { ...envelopeOf(delivery, {}, corpus).data, [`t_${tamper.key}`]: tamper.value } }, corpus));
      break;
    case 'event-type':
      body = bodyOf(envelopeOf(delivery, { type: tamperedTypeOf(delivery.eventType, tamper.type) }, corpus));
      break;
    case 'event-id':
      body = original;
      break;
  }
  // A change that happens to spell the same bytes is no tampering: change the event id instead.
  return sameBytes(body, original) ? bodyOf(envelopeOf(delivery, { id: `${delivery.eventId}x` }, corpus)) : body;
}

function damaged(signature: string, damage: Base64Damage): string {
  switch (damage.how) {
    case 'replace':
      return `${signature.slice(0, damage.position)}${damage.char}${signature.slice(damage.position + 1)}`;
    case 'truncate':
      return signature.slice(0, damage.length);
    case 'garbage':
      return damage.text === signature ? `${damage.text}!` : damage.text;
  }
}

/** The first `count` of the other keys, with the right key put at `position` (mod count): the rotation header's order. */
function rotationKeys(key: Uint8Array, others: readonly Uint8Array[], count: number, position: number): Uint8Array[] {
  const keys = others.slice(0, count - 1);
  keys.splice(position % count, 0, key);
  return keys;
}

/**
 * The body of a large valid case: `filler` repeated up to a size between a few bytes and the limit,
 * the smaller of the receiver's and Hookline's largest delivery (a larger body is one Hookline never sends).
 */
function chunkedBody(fuzzCase: Extract<FuzzCase, { kind: 'valid-chunked' }>, context: BuildContext): Uint8Array {
  const { delivery } = fuzzCase;
  const padded = (text: string) => deliveryBody(delivery, context.corpus, { ...envelopeOf(delivery, {}, context.corpus).data, text });
  const base = padded('').length;
  const limit = Math.min(context.maxBodyBytes, context.largestDeliveryBytes ?? Infinity);
  // Log-uniform from the smallest body to the limit: most bodies small, some at the limit.
  const target = Math.min(limit, Math.round(base * (Math.max(limit, base) / base) ** (fuzzCase.sizePermille / 1000)));
  const repeats = Math.max(0, Math.floor((target - base) / encoder.encode(fuzzCase.filler).length));
  return padded(fuzzCase.filler.repeat(repeats));
}

/** The requests of one case, signed as the case says, with the clock and id the context gives. */
export function buildExchange(fuzzCase: FuzzCase, context: BuildContext): FuzzExchange {
  switch (fuzzCase.kind) {
    case 'id-squatting': {
      const genuine = buildRequest({ kind: 'valid', delivery: fuzzCase.delivery }, context);
      const forged =
        fuzzCase.forgery === 'no-signature' ? buildRequest({ kind: 'missing-header', delivery: fuzzCase.delivery, header: 'webhook-signature' }, context)
        : fuzzCase.forgery === 'wrong-secret' ? buildRequest({ kind: 'wrong-secret', delivery: fuzzCase.delivery, otherKey: fuzzCase.otherKey }, context)
        : buildRequest({ kind: 'tampered-body', delivery: fuzzCase.delivery, tamper: { how: 'event-id' } }, context);
      // The controls: a fresh id and its repeat, to tell what this receiver answers to each (squatting.ts).
      const fresh = { ...context, webhookId: `${context.webhookId}_fresh` };
      const control = buildRequest({ kind: 'valid', delivery: fuzzCase.delivery }, fresh);
      return { requests: [forged, forged, genuine, control, control], concurrent: false };
    }
    case 'repeated-webhook-id': {
      const first = buildRequest({ kind: 'valid', delivery: fuzzCase.delivery }, context);
      const again = buildRequest({ kind: 'valid', delivery: fuzzCase.delivery }, { ...context, nowSeconds: context.nowSeconds + fuzzCase.laterSeconds });
      return { requests: [first, again], concurrent: false };
    }
    case 'concurrent-duplicates': {
      const request = buildRequest({ kind: 'valid', delivery: fuzzCase.delivery }, context);
      return { requests: Array.from({ length: fuzzCase.copies }, () => request), concurrent: true };
    }
    default:
      return { requests: [buildRequest(fuzzCase, context)], concurrent: false };
  }
}

/** The single request of a one-request case. */
export function buildRequest(fuzzCase: FuzzCase, context: BuildContext): FuzzRequest {
  const { delivery } = fuzzCase;
  const id = context.webhookId;
  const beyond = TIMESTAMP_MARGIN_SECONDS + context.toleranceSeconds;
  let offset = delivery.offsetSeconds;
  if (fuzzCase.kind === 'stale-timestamp') offset = -(beyond + fuzzCase.beyondSeconds);
  if (fuzzCase.kind === 'future-timestamp') offset = beyond + fuzzCase.beyondSeconds;
  const timestamp = String(context.nowSeconds + offset);

  let signedBody: Uint8Array;
  if (fuzzCase.kind === 'oversized-body') {
    // Each `x` is one byte, so the padding sets the size exactly.
    const padded = (padding: string) => bodyOf(envelopeOf(delivery, { data: { ...envelopeOf(delivery, {}, context.corpus).data, padding } }, context.corpus));
    const base = padded('').length;
    signedBody = padded('x'.repeat(Math.max(0, context.maxBodyBytes + 1 + fuzzCase.extraBytes - base)));
  } else if (fuzzCase.kind === 'valid-utf8') {
    signedBody = deliveryBody(delivery, context.corpus, { ...envelopeOf(delivery, {}, context.corpus).data, text: fuzzCase.text });
  } else if (fuzzCase.kind === 'valid-chunked') {
    signedBody = chunkedBody(fuzzCase, context);
  } else {
    signedBody = deliveryBody(delivery, context.corpus);
  }
  const signature = sign(context.key, id, timestamp, signedBody);
  let sentBody = signedBody;
  let signatureHeader = `v1,${signature}`;

  switch (fuzzCase.kind) {
    case 'valid-rotation':
      signatureHeader = rotationKeys(context.key, fuzzCase.otherKeys, fuzzCase.candidates, fuzzCase.position)
        .map((key) => `v1,${sign(key, id, timestamp, signedBody)}`)
        .join(' ');
      break;
    case 'wrong-secret':
      signatureHeader = `v1,${sign(fuzzCase.otherKey, id, timestamp, signedBody)}`;
      break;
    case 'tampered-body':
      sentBody = tamperedBody(delivery, signedBody, fuzzCase.tamper, context.corpus);
      break;
    case 'reserialised-json':
      sentBody = encoder.encode(spellJson(envelopeOf(delivery, {}, context.corpus), fuzzCase.sentStyle));
      break;
    case 'unknown-version':
      signatureHeader = `${fuzzCase.version},${signature}`;
      break;
    case 'bad-base64':
      signatureHeader = `v1,${damaged(signature, fuzzCase.damage)}`;
      break;
    default:
      break;
  }
  const headers = deliveryHeadersWithContentType(context.customHeaders, id, timestamp, signatureHeader);
  if (fuzzCase.kind === 'missing-header') delete headers[fuzzCase.header];
  if (fuzzCase.kind === 'garbage-header') headers[fuzzCase.header] = garbageFor(fuzzCase.header, fuzzCase.garbage, headers[fuzzCase.header]!);
  if (fuzzCase.kind === 'valid-chunked') {
    return { headers, body: sentBody, transfer: { framing: fuzzCase.transfer.framing, splits: splitsInsideCharacters(sentBody, fuzzCase.transfer.pieces) } };
  }
  return { headers, body: sentBody };
}

/** Garbage that cannot be read as the value it replaces (a number for the timestamp, the same id). */
function garbageFor(header: string, garbage: string, original: string): string {
  if (header === 'webhook-timestamp' && /^\d+$/.test(garbage)) return `${garbage}x`;
  return garbage === original ? `${garbage}x` : garbage;
}
