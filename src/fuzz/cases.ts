/**
 * What the receiver fuzzer sends: kinds of case, what a correct receiver answers to each, and the
 * fast-check arbitraries that generate them. A case is plain data (no clock, no secret): build.ts
 * turns it into the HTTP request, so fast-check can shrink a failing case and the seed replays it.
 */
import fc from 'fast-check';
import { EVENT_TYPES, METADATA_KEYS } from '../sdk/types.js';
import type { EventType, MetadataKey } from '../sdk/types.js';
import type { JsonStyle, JsonValue } from './json-style.js';
import { RESPELLINGS } from './json-style.js';
import { isoTime } from '../iso-time.js';
import { filler, unicodeText } from './text.js';

/**
 * What a correct receiver answers, by kind:
 * - `accept`: a 2xx.
 * - `reject`: an answer that is not 2xx (no answer at all is a failure too: the receiver broke).
 * - `reject-or-close`: not 2xx, or the connection closed before an answer (a body-size limit).
 * - `accept-after-forgery`: a forged request with a fresh `webhook-id`, twice, then the genuine
 *   delivery with that id, then a fresh delivery and its repeat as controls: the forgeries a non-2xx,
 *   the genuine one a 2xx, and not the answer to a repeat where that differs (squatting.ts).
 * - `accept-repeat`: the same delivery twice, in turn; both 2xx (see `--expect-duplicate`).
 * - `accept-concurrent`: the same delivery several times at once; all 2xx (see `--expect-duplicate`).
 */
export type Expectation = 'accept' | 'reject' | 'reject-or-close' | 'accept-after-forgery' | 'accept-repeat' | 'accept-concurrent';

export const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
export type SignedHeader = (typeof SIGNED_HEADERS)[number];

export interface CaseSpec {
  readonly expect: Expectation;
  readonly what: string;
  /** Fewer runs than `--runs` for costly cases. */
  readonly maxRuns?: number;
}

export const CASE_SPECS = {
  valid: { expect: 'accept', what: 'correctly signed, timestamp within ±10 s' },
  'valid-utf8': { expect: 'accept', what: 'correctly signed, non-ASCII text (accents, CJK, emoji, U+2028) as raw UTF-8' },
  'valid-chunked': { expect: 'accept', what: 'correctly signed, up to the body limit or Hookline\'s largest delivery, written in pieces cut inside characters', maxRuns: 40 },
  'valid-rotation': { expect: 'accept', what: '1 to 4 v1 candidates, the right one anywhere (secret rotation)' },
  'tampered-body': { expect: 'reject', what: 'body changed after signing' },
  'wrong-secret': { expect: 'reject', what: 'signed with another secret' },
  'stale-timestamp': { expect: 'reject', what: 'signed, timestamp older than the tolerance' },
  'future-timestamp': { expect: 'reject', what: 'signed, timestamp further ahead than the tolerance' },
  'reserialised-json': { expect: 'reject', what: 'same JSON value, re-spelled (pretty, spaced, escaped…) after signing' },
  'missing-header': { expect: 'reject', what: 'one webhook-* header left out' },
  'garbage-header': { expect: 'reject', what: 'one webhook-* header replaced by garbage' },
  'unknown-version': { expect: 'reject', what: 'right signature under an unknown version (v2,…)' },
  'bad-base64': { expect: 'reject', what: 'v1 signature with broken base64' },
  'oversized-body': { expect: 'reject-or-close', what: 'signed body over the size limit', maxRuns: 5 },
  'id-squatting': { expect: 'accept-after-forgery', what: 'a forged request with a fresh webhook-id, twice, then the genuine delivery with it, answered as a new delivery is', maxRuns: 50 },
  'repeated-webhook-id': { expect: 'accept-repeat', what: 'a valid delivery sent again, re-signed, as a retry sends it', maxRuns: 50 },
  'concurrent-duplicates': { expect: 'accept-concurrent', what: 'the same valid delivery sent 2 to 4 times at once', maxRuns: 20 },
} as const satisfies Record<string, CaseSpec>;

export type CaseKind = keyof typeof CASE_SPECS;
export const CASE_KINDS = Object.keys(CASE_SPECS) as CaseKind[];

/** The delivery every case starts from, its body spelled as Hookline spells it (JSON.stringify). */
export interface DeliveryDraft {
  /** Part of the `webhook-id`; the runner makes each request's id unique around it. */
  readonly idStem: string;
  /** Seconds between now and `webhook-timestamp` (for valid cases). */
  readonly offsetSeconds: number;
  readonly eventId: string;
  readonly eventType: EventType;
  readonly eventTime: string;
  readonly metadata: Partial<Record<MetadataKey, string>>;
  readonly data: Record<string, JsonValue>;
  /** Which corpus event the body is, when a corpus is given (modulo its size). */
  readonly corpusPick: number;
}

export type Tamper =
  | { readonly how: 'byte'; readonly position: number; readonly flip: number }
  | { readonly how: 'data'; readonly key: string; readonly value: JsonValue }
  | { readonly how: 'event-id' }
  | { readonly how: 'event-type'; readonly type: EventType };

export type Base64Damage =
  | { readonly how: 'replace'; readonly position: number; readonly char: string }
  | { readonly how: 'truncate'; readonly length: number }
  | { readonly how: 'garbage'; readonly text: string };

/** How a large body goes on the wire. */
export interface Transfer {
  readonly framing: 'content-length' | 'chunked';
  /** Writes the body is cut into. */
  readonly pieces: number;
}

export type FuzzCase =
  | { readonly kind: 'valid'; readonly delivery: DeliveryDraft }
  | { readonly kind: 'valid-utf8'; readonly delivery: DeliveryDraft; readonly text: string }
  | { readonly kind: 'valid-chunked'; readonly delivery: DeliveryDraft; readonly filler: string; readonly sizePermille: number; readonly transfer: Transfer }
  | { readonly kind: 'valid-rotation'; readonly delivery: DeliveryDraft; readonly otherKeys: readonly Uint8Array[]; readonly candidates: number; readonly position: number }
  | { readonly kind: 'wrong-secret'; readonly delivery: DeliveryDraft; readonly otherKey: Uint8Array }
  | { readonly kind: 'tampered-body'; readonly delivery: DeliveryDraft; readonly tamper: Tamper }
  | { readonly kind: 'stale-timestamp' | 'future-timestamp'; readonly delivery: DeliveryDraft; readonly beyondSeconds: number }
  | { readonly kind: 'reserialised-json'; readonly delivery: DeliveryDraft; readonly sentStyle: JsonStyle }
  | { readonly kind: 'missing-header'; readonly delivery: DeliveryDraft; readonly header: SignedHeader }
  | { readonly kind: 'garbage-header'; readonly delivery: DeliveryDraft; readonly header: SignedHeader; readonly garbage: string }
  | { readonly kind: 'unknown-version'; readonly delivery: DeliveryDraft; readonly version: string }
  | { readonly kind: 'bad-base64'; readonly delivery: DeliveryDraft; readonly damage: Base64Damage }
  | { readonly kind: 'oversized-body'; readonly delivery: DeliveryDraft; readonly extraBytes: number }
  | { readonly kind: 'id-squatting'; readonly delivery: DeliveryDraft; readonly forgery: 'wrong-secret' | 'tampered-body' | 'no-signature'; readonly otherKey: Uint8Array }
  | { readonly kind: 'repeated-webhook-id'; readonly delivery: DeliveryDraft; readonly laterSeconds: number }
  | { readonly kind: 'concurrent-duplicates'; readonly delivery: DeliveryDraft; readonly copies: number };

const alphanumeric = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const printable = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));
const dataKey = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);
const jsonValue = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>;

const deliveryDraft: fc.Arbitrary<DeliveryDraft> = fc.record({
  idStem: fc.string({ unit: alphanumeric, minLength: 1, maxLength: 12 }),
  offsetSeconds: fc.integer({ min: -10, max: 10 }),
  eventId: fc.string({ unit: alphanumeric, minLength: 1, maxLength: 24 }).map((id) => `evt_${id}`),
  eventType: fc.constantFrom(...EVENT_TYPES),
  eventTime: fc
    .integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) })
    .map(isoTime),
  metadata: fc.dictionary(fc.constantFrom(...METADATA_KEYS), fc.string({ maxLength: 24 }), { maxKeys: 3 }),
  data: fc.dictionary(dataKey, jsonValue, { maxKeys: 6 }),
  corpusPick: fc.nat(),
});

const otherKey = fc.uint8Array({ minLength: 32, maxLength: 32 });
const signedHeader = fc.constantFrom(...SIGNED_HEADERS);
const beyond = fc.integer({ min: 0, max: 7 * 24 * 3600 });

const tamper: fc.Arbitrary<Tamper> = fc.oneof(
  fc.record({ how: fc.constant('byte' as const), position: fc.nat(), flip: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ how: fc.constant('data' as const), key: dataKey, value: jsonValue }),
  fc.constant({ how: 'event-id' as const }),
  fc.record({ how: fc.constant('event-type' as const), type: fc.constantFrom(...EVENT_TYPES) }),
);

// Characters outside both base64 alphabets (`-` and `_` are base64url, which lenient decoders take).
const base64Damage: fc.Arbitrary<Base64Damage> = fc.oneof(
  // Never the final `=`: a decoder that ignores padding would read the same bytes.
  fc.record({ how: fc.constant('replace' as const), position: fc.integer({ min: 0, max: 42 }), char: fc.constantFrom('!', '*', '.', '~', '#', '%', '@', '$') }),
  // 43 characters would be the signature without its padding: as good as the right one to some decoders.
  fc.record({ how: fc.constant('truncate' as const), length: fc.integer({ min: 0, max: 42 }) }),
  fc.record({ how: fc.constant('garbage' as const), text: fc.string({ unit: printable, minLength: 1, maxLength: 60 }) }),
);

/** The arbitrary of one kind of case. */
export function caseArbitrary(kind: CaseKind): fc.Arbitrary<FuzzCase> {
  const d = deliveryDraft;
  switch (kind) {
    case 'valid':
      return d.map((delivery) => ({ kind, delivery }));
    case 'valid-utf8':
      return fc.record({ delivery: d, text: unicodeText }).map((value) => ({ kind, ...value }));
    case 'valid-chunked':
      return fc
        .record({
          delivery: d,
          filler,
          sizePermille: fc.integer({ min: 0, max: 1000 }),
          transfer: fc.record({ framing: fc.constantFrom('chunked' as const, 'content-length' as const), pieces: fc.integer({ min: 2, max: 8 }) }),
        })
        .map((value) => ({ kind, ...value }));
    case 'valid-rotation':
      return fc
        .record({ delivery: d, otherKeys: fc.array(otherKey, { minLength: 3, maxLength: 3 }), candidates: fc.integer({ min: 1, max: 4 }), position: fc.nat({ max: 3 }) })
        .map((value) => ({ kind, ...value }));
    case 'wrong-secret':
      return fc.record({ delivery: d, otherKey }).map((value) => ({ kind, ...value }));
    case 'id-squatting':
      return fc.record({ delivery: d, forgery: fc.constantFrom('wrong-secret' as const, 'tampered-body' as const, 'no-signature' as const), otherKey }).map((value) => ({ kind, ...value }));
    case 'repeated-webhook-id':
      return fc.record({ delivery: d, laterSeconds: fc.integer({ min: 0, max: 60 }) }).map((value) => ({ kind, ...value }));
    case 'concurrent-duplicates':
      return fc.record({ delivery: d, copies: fc.integer({ min: 2, max: 4 }) }).map((value) => ({ kind, ...value }));
    case 'tampered-body':
      return fc.record({ delivery: d, tamper }).map((value) => ({ kind, ...value }));
    case 'stale-timestamp':
    case 'future-timestamp':
      return fc.record({ delivery: d, beyondSeconds: beyond }).map((value) => ({ kind, ...value }));
    case 'reserialised-json':
      return fc.record({ delivery: d, sentStyle: fc.constantFrom(...RESPELLINGS) }).map((value) => ({ kind, ...value }));
    case 'missing-header':
      return fc.record({ delivery: d, header: signedHeader }).map((value) => ({ kind, ...value }));
    case 'garbage-header':
      return fc.record({ delivery: d, header: signedHeader, garbage: fc.string({ unit: printable, minLength: 1, maxLength: 40 }) }).map((value) => ({ kind, ...value }));
    case 'unknown-version':
      return fc.record({ delivery: d, version: fc.constantFrom('v2', 'v0', 'V1', 'v1a') }).map((value) => ({ kind, ...value }));
    case 'bad-base64':
      return fc.record({ delivery: d, damage: base64Damage }).map((value) => ({ kind, ...value }));
    case 'oversized-body':
      return fc.record({ delivery: d, extraBytes: fc.integer({ min: 0, max: 4096 }) }).map((value) => ({ kind, ...value }));
  }
}
