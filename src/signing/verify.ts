import type { HmacBackend } from './backend.js';
import { loadDefaultBackend } from './backend.js';
import { decodeBase64 } from './bytes.js';
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

/** The decoded `v1` candidates of a header; other versions are ignored, malformed ones dropped. */
function parseCandidates(header: unknown): Uint8Array[] {
  if (typeof header !== 'string') return [];
  const candidates: Uint8Array[] = [];
  for (const part of header.split(CANDIDATE_SEPARATOR)) {
    if (!part.startsWith(CANDIDATE_PREFIX)) continue;
    const bytes = decodeBase64(part.slice(CANDIDATE_PREFIX.length));
    if (bytes && bytes.length === SIGNATURE_BYTES) candidates.push(bytes);
  }
  return candidates;
}

function isBody(body: unknown): body is string | Uint8Array {
  return typeof body === 'string' || body instanceof Uint8Array;
}

/** Builds a verifier with an explicit HMAC backend and clock (tests, or pinning WebCrypto). */
export function createWebhookVerifier(options: VerifierOptions = {}): WebhookVerifier {
  const now = options.now ?? Date.now;
  return async function verify(input) {
    try {
      if (input === null || typeof input !== 'object') return false;
      const { id, signature, body, secret } = input;
      const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
      if (typeof id !== 'string' || id.length === 0 || !isBody(body)) return false;
      if (typeof tolerance !== 'number' || !(tolerance >= 0)) return false;
      const timestamp = parseTimestamp(input.timestamp);
      if (timestamp === null || Math.abs(now() / 1000 - timestamp) > tolerance) return false;
      const key = decodeSecret(secret);
      const candidates = parseCandidates(signature);
      if (!key || candidates.length === 0) return false;

      const backend = options.backend ?? (await loadDefaultBackend());
      const expected = await backend.sign(key, id, String(timestamp), body);
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
