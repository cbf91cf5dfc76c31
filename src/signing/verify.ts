import type { HmacBackend } from './backend.js';
import { loadDefaultBackend } from './backend.js';
import { CANDIDATE_SEPARATOR, SIGNATURE_VERSION } from './content.js';
import { decodeSecret } from './secret.js';

/** Default tolerance between the `webhook-timestamp` and the receiver's clock, either direction. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SIGNATURE_BYTES = 32;
const TIMESTAMP_PATTERN = /^\d{1,15}$/;
const CANDIDATE_PREFIX = `${SIGNATURE_VERSION},`;

export interface VerifyWebhookInput {
  /** The `webhook-id` header. */
  id: string;
  /** The `webhook-timestamp` header (Unix seconds), as received or as a number. */
  timestamp: string | number;
  /** The `webhook-signature` header: one or more `v1,<base64>` candidates separated by spaces. */
  signature: string;
  /** The raw request body, exactly as received. Never re-serialised JSON. */
  body: string | Uint8Array;
  /** The endpoint's `whsec_…` secret. */
  secret: string;
  /**
   * How far the timestamp may be from now, in seconds, in the past or the future.
   * @default 300
   */
  toleranceSeconds?: number;
}

export interface VerifierOptions {
  /** HMAC implementation. @default node:crypto where available, else WebCrypto */
  backend?: HmacBackend;
  /** Clock in milliseconds since the epoch. @default Date.now */
  now?: () => number;
}

export type WebhookVerifier = (input: VerifyWebhookInput) => Promise<boolean>;

function parseTimestamp(timestamp: unknown): number | null {
  if (typeof timestamp === 'number') return Number.isSafeInteger(timestamp) && timestamp >= 0 ? timestamp : null;
  if (typeof timestamp === 'string' && TIMESTAMP_PATTERN.test(timestamp)) return Number(timestamp);
  return null;
}

/** Value of each base64 character by char code, -1 for characters outside the alphabet. */
const BASE64_VALUES = new Int8Array(128).fill(-1);
for (const [value, char] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) {
  BASE64_VALUES[char.charCodeAt(0)] = value;
}

/**
 * Decodes the text after `v1,` when it is the one canonical base64 of 32 bytes (43 characters then
 * `=`, the last character's two spare bits zero), else `null`. Canonical only: atob ignores the
 * spare bits, so three other spellings of a valid signature would verify, whereas Standard Webhooks
 * compares the base64 text itself. Runs on every delivery, hence a table rather than regex + atob.
 */
function decodeSignature(part: string, start: number): Uint8Array | null {
  if (part.length - start !== 44 || part.charCodeAt(start + 43) !== 61 /* = */) return null;
  const bytes = new Uint8Array(SIGNATURE_BYTES);
  let bits = 0;
  let buffered = 0;
  let out = 0;
  let invalid = 0;
  for (let i = start; i < start + 43; i++) {
    const code = part.charCodeAt(i);
    const value = code < 128 ? BASE64_VALUES[code]! : -1;
    invalid |= value;
    bits = (bits << 6) | (value & 63);
    buffered += 6;
    if (buffered >= 8) {
      buffered -= 8;
      bytes[out++] = (bits >> buffered) & 0xff;
    }
  }
  // 43 characters carry 258 bits: the two left over must be zero, or the spelling is not canonical.
  return invalid < 0 || (bits & 3) !== 0 ? null : bytes;
}

/** The decoded `v1` candidates of a header; other versions are ignored, malformed ones dropped. */
function parseCandidates(header: unknown): Uint8Array[] {
  if (typeof header !== 'string') return [];
  const candidates: Uint8Array[] = [];
  for (const part of header.split(CANDIDATE_SEPARATOR)) {
    if (!part.startsWith(CANDIDATE_PREFIX)) continue;
    const bytes = decodeSignature(part, CANDIDATE_PREFIX.length);
    if (bytes) candidates.push(bytes);
  }
  return candidates;
}

function isBody(body: unknown): body is string | Uint8Array {
  return typeof body === 'string' || body instanceof Uint8Array;
}

/** Builds a verifier with an explicit HMAC backend and clock (tests, or pinning WebCrypto). */
export function createWebhookVerifier(options: VerifierOptions = {}): WebhookVerifier {
  const now = options.now ?? Date.now;
  // Kept across calls for the hot path: a receiver verifies many deliveries under one secret, so its
  // key is decoded once; the default backend is awaited only until it has loaded.
  let lastSecret: unknown;
  let lastKey: Uint8Array | null = null;
  let backend = options.backend;
  return async function verify(input) {
    try {
      if (input === null || typeof input !== 'object') return false;
      const { id, signature, body, secret } = input;
      const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
      if (typeof id !== 'string' || id.length === 0 || !isBody(body)) return false;
      if (typeof tolerance !== 'number' || !(tolerance >= 0)) return false;
      const timestamp = parseTimestamp(input.timestamp);
      if (timestamp === null || Math.abs(now() / 1000 - timestamp) > tolerance) return false;
      if (secret !== lastSecret || typeof secret !== 'string') {
        lastKey = decodeSecret(secret);
        lastSecret = secret;
      }
      const key = lastKey;
      const candidates = parseCandidates(signature);
      if (!key || candidates.length === 0) return false;

      backend ??= await loadDefaultBackend();
      const signed = backend.sign(key, id, String(timestamp), body);
      const expected = signed instanceof Uint8Array ? signed : await signed;
      // Compare against every candidate (no early exit) so timing does not reveal which one matched.
      let matched = false;
      for (const candidate of candidates) matched = backend.equal(expected, candidate) || matched;
      return matched;
    } catch {
      return false;
    }
  };
}

/**
 * Verifies a Standard Webhooks delivery from Hookline. Resolves `false` (never throws) on a bad
 * signature, no matching candidate, a timestamp outside the tolerance, or any malformed input.
 */
export const verifyWebhookSignature: WebhookVerifier = createWebhookVerifier();
