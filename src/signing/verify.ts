import type { HmacBackend } from './backend.js';
import { loadDefaultBackend } from './backend.js';
import { CANDIDATE_SEPARATOR, SIGNATURE_VERSION } from './content.js';
import { decodeVerifierSecret } from './secret.js';

/** Default tolerance between the `webhook-timestamp` and the receiver's clock, either direction. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * How far `timestamp` (Unix seconds) is ahead of the clock (negative: behind), with the clock in
 * whole seconds as the Standard Webhooks reference libraries take it: a timestamp exactly the
 * tolerance away verifies at any moment of that second, as it does for them.
 */
export function timestampSkewSeconds(timestamp: number, nowMs: number): number {
  return timestamp - Math.floor(nowMs / 1000);
}

const SIGNATURE_BYTES = 32;
/** Digits a `webhook-timestamp` may have: up to 15, so the value is an exact double. */
const TIMESTAMP_MAX_DIGITS = 15;
/** Secrets whose decoded key a verifier keeps (receivers verify under a handful, during rotation two). */
const SECRET_CACHE_SIZE = 16;
const CANDIDATE_PREFIX = `${SIGNATURE_VERSION},`;

/**
 * A header as frameworks hand it over: Node's `IncomingHttpHeaders` (`string | string[] | undefined`),
 * Fetch's `Headers.get` (`string | null`). Missing (`null`, `undefined`) fails verification; an array
 * (a header sent more than once) counts as the one value it holds.
 */
export type WebhookHeaderValue = string | readonly string[] | null | undefined;

export interface VerifyWebhookInput {
  /** The `webhook-id` header. */
  id: WebhookHeaderValue;
  /** The `webhook-timestamp` header (Unix seconds), as received or as a number. */
  timestamp: WebhookHeaderValue | number;
  /**
   * The `webhook-signature` header: one or more `v1,<base64>` candidates separated by spaces; as an
   * array (the header sent more than once), the candidates of every element.
   */
  signature: WebhookHeaderValue;
  /** The raw request body, exactly as received. Never re-serialised JSON. */
  body: string | Uint8Array;
  /**
   * The endpoint's secret: `whsec_<base64>`, or the base64 alone; padding optional, whitespace at
   * its end ignored. Or several (during a rotation you started): the delivery verifies when it was
   * signed with any of them.
   */
  secret: string | readonly string[];
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

/** Unix seconds from a number, or from a string of 1 to 15 ASCII digits; `null` for anything else. */
function parseTimestamp(timestamp: unknown): number | null {
  if (typeof timestamp === 'number') return Number.isSafeInteger(timestamp) && timestamp >= 0 ? timestamp : null;
  if (typeof timestamp !== 'string' || timestamp.length === 0 || timestamp.length > TIMESTAMP_MAX_DIGITS) return null;
  let seconds = 0;
  for (let i = 0; i < timestamp.length; i++) {
    const digit = timestamp.charCodeAt(i) - 48; /* 0 */
    if (digit < 0 || digit > 9) return null;
    seconds = seconds * 10 + digit;
  }
  return seconds;
}

/** The decimal text that is signed: the header itself when already canonical (no leading zero). */
function timestampText(raw: unknown, seconds: number): string {
  return typeof raw === 'string' && (raw.length === 1 || raw.charCodeAt(0) !== 48) ? raw : String(seconds);
}

/** Value of each base64 character by char code, -1 for characters outside the alphabet. */
const BASE64_VALUES = new Int8Array(128).fill(-1);
for (const [value, char] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) {
  BASE64_VALUES[char.charCodeAt(0)] = value;
}

/**
 * Decodes `header[start, end)`, the text after `v1,`, when it is the one canonical base64 of 32
 * bytes (43 characters then `=`, the last character's two spare bits zero), else `null`. Canonical
 * only: atob ignores the spare bits, so three other spellings of a valid signature would verify,
 * whereas Standard Webhooks compares the base64 text itself. Runs on every delivery, hence a table
 * rather than regex + atob.
 */
function decodeSignature(header: string, start: number, end: number): Uint8Array | null {
  if (end - start !== 44 || header.charCodeAt(start + 43) !== 61 /* = */) return null;
  const bytes = new Uint8Array(SIGNATURE_BYTES);
  let bits = 0;
  let buffered = 0;
  let out = 0;
  let invalid = 0;
  for (let i = start; i < start + 43; i++) {
    const code = header.charCodeAt(i);
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

/**
 * The decoded `v1` candidates of a header; other versions are ignored, malformed ones dropped.
 * Walks the separators by index rather than `split`, which would copy every part.
 */
function parseCandidates(header: unknown): Uint8Array[] {
  if (typeof header !== 'string') return [];
  const candidates: Uint8Array[] = [];
  for (let start = 0; start <= header.length; ) {
    let end = header.indexOf(CANDIDATE_SEPARATOR, start);
    if (end < 0) end = header.length;
    if (header.startsWith(CANDIDATE_PREFIX, start)) {
      const bytes = decodeSignature(header, start + CANDIDATE_PREFIX.length, end);
      if (bytes) candidates.push(bytes);
    }
    start = end + CANDIDATE_SEPARATOR.length;
  }
  return candidates;
}

/** The one value of a header given as an array; an array of several values is ambiguous (`null`). */
function singleValue(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.length === 1 ? value[0] : null;
}

/** A signature header given as an array: every element's candidates, as one header. */
function signatureHeader(value: unknown): unknown {
  return Array.isArray(value) && value.every((element) => typeof element === 'string') ? value.join(CANDIDATE_SEPARATOR) : value;
}

function isBody(body: unknown): body is string | Uint8Array {
  return typeof body === 'string' || body instanceof Uint8Array;
}

/** Builds a verifier with an explicit HMAC backend and clock (tests, or pinning WebCrypto). */
export function createWebhookVerifier(options: VerifierOptions = {}): WebhookVerifier {
  const now = options.now ?? Date.now;
  // Kept across calls for the hot path: a receiver verifies many deliveries under a few secrets, so
  // each key is decoded once (and stays the same object, which the node:crypto backend keys its
  // precomputed HMAC pads on); the default backend is awaited only until it has loaded.
  const keys = new Map<string, Uint8Array>(); // least recently used first
  let lastSecret: string | undefined;
  let lastKey: Uint8Array | null = null;
  let backend = options.backend;

  function keyFor(secret: unknown): Uint8Array | null {
    if (typeof secret !== 'string') return null;
    if (secret === lastSecret) return lastKey;
    let key = keys.get(secret) ?? null;
    if (key) {
      keys.delete(secret);
    } else {
      key = decodeVerifierSecret(secret);
      if (!key) return null;
      if (keys.size >= SECRET_CACHE_SIZE) keys.delete(keys.keys().next().value!);
    }
    keys.set(secret, key);
    lastSecret = secret;
    lastKey = key;
    return key;
  }

  return async function verify(input) {
    try {
      if (input === null || typeof input !== 'object') return false;
      const { body, secret } = input;
      const id = singleValue(input.id);
      const signature = signatureHeader(input.signature);
      const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
      if (typeof id !== 'string' || id.length === 0 || !isBody(body)) return false;
      if (typeof tolerance !== 'number' || !(tolerance >= 0)) return false;
      const rawTimestamp = singleValue(input.timestamp);
      const timestamp = parseTimestamp(rawTimestamp);
      if (timestamp === null || Math.abs(timestampSkewSeconds(timestamp, now())) > tolerance) return false;
      const secrets: readonly unknown[] = Array.isArray(secret) ? secret : [secret];
      const keys = secrets.map(keyFor);
      const candidates = parseCandidates(signature);
      // Any malformed secret fails closed: a list with a typo in it is a mistake to see, not to skip.
      if (keys.length === 0 || keys.some((key) => key === null) || candidates.length === 0) return false;

      backend ??= await loadDefaultBackend();
      const signedText = timestampText(rawTimestamp, timestamp);
      let matched = false;
      for (const key of keys as Uint8Array[]) {
        const signed = backend.sign(key, id, signedText, body);
        const expected = signed instanceof Uint8Array ? signed : await signed;
        // Compare against every candidate (no early exit) so timing does not reveal which one matched.
        for (const candidate of candidates) matched = backend.equal(expected, candidate) || matched;
      }
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
