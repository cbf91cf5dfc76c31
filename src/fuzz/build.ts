import { createHmac } from 'node:crypto';
import { EVENT_TYPES } from '../sdk/types.js';
import type { EventType } from '../sdk/types.js';
import { JSON_STYLES, spellJson } from './json-style.js';
import type { JsonStyle } from './json-style.js';
import type { Base64Damage, DeliveryDraft, FuzzCase, Tamper } from './cases.js';

/** One HTTP request of the fuzzer: the headers (webhook-* and content-type) and the body bytes. */
export interface FuzzRequest {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
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
}

/** How far beyond the tolerance stale and future timestamps start, for clocks a little apart. */
export const TIMESTAMP_MARGIN_SECONDS = 10;

const encoder = new TextEncoder();

function sign(key: Uint8Array, id: string, timestamp: string, body: Uint8Array): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

function envelopeOf(delivery: DeliveryDraft, overrides: { id?: string; type?: string; data?: Record<string, unknown> } = {}) {
  return {
    version: 'v1',
    id: overrides.id ?? delivery.eventId,
    type: overrides.type ?? delivery.eventType,
    metadata: delivery.metadata,
    data: overrides.data ?? delivery.data,
    timestamp: delivery.eventTime,
  };
}

const bodyOf = (envelope: unknown, style: DeliveryDraft['style']): Uint8Array => encoder.encode(spellJson(envelope, style));
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((byte, index) => byte === b[index]);
const nextOf = <T>(list: readonly T[], value: T): T => list[(list.indexOf(value) + 1) % list.length]!;

/** The spelling a re-serialised body is sent in: the case's, or the next one when it is the signed one. */
export const sentStyleOf = (signed: JsonStyle, wanted: JsonStyle): JsonStyle => (wanted === signed ? nextOf(JSON_STYLES, wanted) : wanted);

/** The type a tampered body gets: the case's, or the next one when it is the delivery's own. */
export const tamperedTypeOf = (own: EventType, wanted: EventType): EventType => (wanted === own ? nextOf(EVENT_TYPES, wanted) : wanted);

function tamperedBody(delivery: DeliveryDraft, original: Uint8Array, tamper: Tamper): Uint8Array {
  let body: Uint8Array;
  switch (tamper.how) {
    case 'byte':
      body = Uint8Array.from(original);
      body[tamper.position % body.length] = body[tamper.position % body.length]! ^ tamper.flip;
      return body;
    case 'data':
      body = bodyOf(envelopeOf(delivery, { data: { ...delivery.data, [`t_${tamper.key}`]: tamper.value } }), delivery.style);
      break;
    case 'event-type':
      body = bodyOf(envelopeOf(delivery, { type: tamperedTypeOf(delivery.eventType, tamper.type) }), delivery.style);
      break;
    case 'event-id':
      body = original;
      break;
  }
  // A change that happens to spell the same bytes is no tampering: change the event id instead.
  return sameBytes(body, original) ? bodyOf(envelopeOf(delivery, { id: `${delivery.eventId}x` }), delivery.style) : body;
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

/** The request of one case: signed as the case says, with the clock and id the context gives. */
export function buildRequest(fuzzCase: FuzzCase, context: BuildContext): FuzzRequest {
  const { delivery } = fuzzCase;
  const id = context.webhookId;
  const beyond = TIMESTAMP_MARGIN_SECONDS + context.toleranceSeconds;
  let offset = delivery.offsetSeconds;
  if (fuzzCase.kind === 'stale-timestamp') offset = -(beyond + fuzzCase.beyondSeconds);
  if (fuzzCase.kind === 'future-timestamp') offset = beyond + fuzzCase.beyondSeconds;
  const timestamp = String(context.nowSeconds + offset);

  let signedBody = bodyOf(envelopeOf(delivery), delivery.style);
  if (fuzzCase.kind === 'oversized-body') {
    // Each `x` is one byte in every spelling, so the padding sets the size exactly.
    const padded = (padding: string) => bodyOf(envelopeOf(delivery, { data: { ...delivery.data, padding } }), delivery.style);
    const base = padded('').length;
    signedBody = padded('x'.repeat(Math.max(0, context.maxBodyBytes + 1 + fuzzCase.extraBytes - base)));
  }
  const signature = sign(context.key, id, timestamp, signedBody);
  let sentBody = signedBody;
  let signatureHeader = `v1,${signature}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp };

  switch (fuzzCase.kind) {
    case 'valid-second-candidate':
      signatureHeader = `v1,${sign(fuzzCase.otherKey, id, timestamp, signedBody)} v1,${signature}`;
      break;
    case 'wrong-secret':
      signatureHeader = `v1,${sign(fuzzCase.otherKey, id, timestamp, signedBody)}`;
      break;
    case 'tampered-body':
      sentBody = tamperedBody(delivery, signedBody, fuzzCase.tamper);
      break;
    case 'reserialised-json': {
      sentBody = bodyOf(envelopeOf(delivery), sentStyleOf(delivery.style, fuzzCase.sentStyle));
      break;
    }
    case 'unknown-version':
      signatureHeader = `${fuzzCase.version},${signature}`;
      break;
    case 'bad-base64':
      signatureHeader = `v1,${damaged(signature, fuzzCase.damage)}`;
      break;
    default:
      break;
  }
  headers['webhook-signature'] = signatureHeader;

  if (fuzzCase.kind === 'missing-header') delete headers[fuzzCase.header];
  if (fuzzCase.kind === 'garbage-header') headers[fuzzCase.header] = garbageFor(fuzzCase.header, fuzzCase.garbage, headers[fuzzCase.header]!);
  return { headers, body: sentBody };
}

/** Garbage that cannot be read as the value it replaces (a number for the timestamp, the same id). */
function garbageFor(header: string, garbage: string, original: string): string {
  if (header === 'webhook-timestamp' && /^\d+$/.test(garbage)) return `${garbage}x`;
  return garbage === original ? `${garbage}x` : garbage;
}
