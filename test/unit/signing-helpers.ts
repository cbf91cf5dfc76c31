/**
 * Shared fixtures for the signing suites (`signing*.test.ts`): the two setups every suite runs
 * under, seeded fast-check settings, arbitraries for deliveries, and one-edit tamperings.
 */
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import type { HmacBackend, WebhookVerifier } from '../../src/signing/index.js';
import { createWebhookVerifier, generateSecret, signWebhook, webCryptoHmacBackend } from '../../src/signing/index.js';

/** Every property runs from this seed, so a failure replays exactly (except generateSecret() values). */
export const SEED = 0x5eed_2025;

export function seeded(numRuns = 100): { seed: number; numRuns: number } {
  return { seed: SEED, numRuns };
}

/** A way to sign and a way to verify with an injected clock (milliseconds since the epoch). */
export interface SigningSetup {
  readonly name: string;
  /** Passed to signWebhook; `undefined` means the default backend. */
  readonly backend: HmacBackend | undefined;
  readonly verifier: (now: () => number) => WebhookVerifier;
}

export const SETUPS: readonly SigningSetup[] = [
  { name: 'default backend (node:crypto)', backend: undefined, verifier: (now) => createWebhookVerifier({ now }) },
  {
    name: 'WebCrypto backend',
    backend: webCryptoHmacBackend,
    verifier: (now) => createWebhookVerifier({ backend: webCryptoHmacBackend, now }),
  },
];

export const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

export const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
export const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });

/** A fresh generateSecret(), or `whsec_` + base64 of 32 bytes fast-check chose. */
export const secretArb: fc.Arbitrary<string> = fc.oneof(
  bytes32.map((bytes) => `whsec_${b64(bytes)}`),
  fc.constant('generated').map(() => generateSecret()),
);

/** Any non-empty id, lone surrogates included, and realistic `msg_…` ids. */
export const idArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  fc.stringMatching(/^msg_[0-9A-Za-z]{20,30}$/),
);

export type BodyForm = 'string' | 'Buffer' | 'Uint8Array' | 'Uint8Array view';

export interface BodyCase {
  readonly form: BodyForm;
  readonly value: string | Uint8Array;
}

/** A Uint8Array over the middle of a larger buffer, so byteOffset and length both matter. */
export function viewOf(bytes: Uint8Array, before = 7, after = 5): Uint8Array {
  const backing = new Uint8Array(before + bytes.length + after).fill(0xaa);
  backing.set(bytes, before);
  return backing.subarray(before, before + bytes.length);
}

export const bodyArb: fc.Arbitrary<BodyCase> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }).map((value) => ({ form: 'string' as const, value })),
  fc.json().map((value) => ({ form: 'string' as const, value })),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ form: 'Buffer' as const, value: Buffer.from(bytes) })),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ form: 'Uint8Array' as const, value: bytes })),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ form: 'Uint8Array view' as const, value: viewOf(bytes) })),
);

export const bodyBytes = (body: string | Uint8Array): Uint8Array => (typeof body === 'string' ? utf8(body) : body);

export interface Delivery {
  readonly id: string;
  /** Unix seconds. */
  readonly seconds: number;
  /** How the timestamp is handed to sign and verify. */
  readonly timestampForm: 'number' | 'string';
  readonly body: BodyCase;
  readonly secret: string;
}

export const timestampOf = (delivery: Delivery): number | string =>
  delivery.timestampForm === 'number' ? delivery.seconds : String(delivery.seconds);

export const deliveryArb: fc.Arbitrary<Delivery> = fc.record({
  id: idArb,
  seconds: fc.integer({ min: 0, max: 99_999_999_999 }),
  timestampForm: fc.constantFrom('number' as const, 'string' as const),
  body: bodyArb,
  secret: secretArb,
});

/** Milliseconds between the timestamp and the verifier's clock, always strictly inside 300 s. */
export const skewMsArb = fc.integer({ min: -299_999, max: 299_999 });

export function sign(setup: SigningSetup, delivery: Delivery, secrets: string | string[] = delivery.secret): Promise<string> {
  return signWebhook({ id: delivery.id, timestamp: timestampOf(delivery), body: delivery.body.value, secret: secrets }, setup.backend);
}

/** The verify input for a delivery and its header, with any field overridden. */
export function inputFor(delivery: Delivery, signature: string, overrides: Record<string, unknown> = {}) {
  return { id: delivery.id, timestamp: timestampOf(delivery), signature, body: delivery.body.value, secret: delivery.secret, ...overrides };
}

/** Replaces the code unit at `index` (mod length) with an ASCII letter different from it. */
export function replaceChar(text: string, index: number, pick: number): string {
  const at = index % text.length;
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  let replacement = letters[pick % letters.length]!;
  if (replacement === text[at]) replacement = letters[(pick + 1) % letters.length]!;
  return text.slice(0, at) + replacement + text.slice(at + 1);
}

/** A copy of the bytes with the byte at `index` (mod length) XORed by a non-zero mask. */
export function flipByte(bytes: Uint8Array, index: number, mask: number): Uint8Array {
  const copy = new Uint8Array(bytes);
  copy[index % copy.length]! ^= mask;
  return copy;
}

/** The same body form, one byte (bytes) or one character (string) different. */
export function tamperBody(body: BodyCase, index: number, mask: number): string | Uint8Array {
  if (typeof body.value === 'string') return replaceChar(body.value, index, mask);
  const flipped = flipByte(body.value, index, mask);
  if (body.form === 'Buffer') return Buffer.from(flipped);
  return body.form === 'Uint8Array view' ? viewOf(flipped) : flipped;
}

/** `v1,<b64>` with one base64 character (of the 43 that carry data) swapped for another. */
export function tamperSignatureChar(candidate: string, index: number, pick: number): string {
  const prefix = 'v1,';
  const encoded = candidate.slice(prefix.length);
  const at = index % 43;
  const original = BASE64_ALPHABET.indexOf(encoded[at]!);
  const replacement = BASE64_ALPHABET[(original + 1 + (pick % 63)) % 64]!;
  return prefix + encoded.slice(0, at) + replacement + encoded.slice(at + 1);
}

/** `v1,<b64>` whose decoded signature has one bit flipped. */
export function tamperSignatureBit(candidate: string, bit: number): string {
  const bytes = Buffer.from(candidate.slice(3), 'base64');
  bytes[(bit >> 3) % 32]! ^= 1 << (bit & 7);
  return `v1,${bytes.toString('base64')}`;
}

/** Values that are wrong in every field: junk of every JavaScript shape. */
export const junkArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything(),
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.uint8Array(),
  fc.constant(null),
  fc.constant(undefined),
  fc.double(),
  fc.integer(),
  fc.bigInt(),
  fc.boolean(),
  fc.object(),
  fc.array(fc.anything()),
  fc.func(fc.anything()),
);

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
