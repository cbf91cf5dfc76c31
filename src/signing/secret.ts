import { decodeBase64, encodeBase64 } from './bytes.js';

/** Every Hookline signing secret starts with this, as Standard Webhooks and Svix secrets do. */
export const SECRET_PREFIX = 'whsec_';

/** Bytes of randomness in a generated secret (256 bits, the HMAC-SHA256 block-size sweet spot). */
export const SECRET_BYTES = 32;

/** A fresh `whsec_<base64 of 32 random bytes>` secret. */
export function generateSecret(): string {
  const bytes = new Uint8Array(SECRET_BYTES);
  globalThis.crypto.getRandomValues(bytes);
  return SECRET_PREFIX + encodeBase64(bytes);
}

/**
 * The HMAC key inside a `whsec_…` secret: the base64-decoded part. `null` when the secret does not
 * have the prefix or its base64 is malformed, so callers fail closed instead of signing with garbage.
 */
export function decodeSecret(secret: unknown): Uint8Array | null {
  if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX)) return null;
  return decodeBase64(secret.slice(SECRET_PREFIX.length));
}

const UNPADDED_TAIL = ['', null, '==', '='] as const;

/**
 * The HMAC key of a secret a receiver verifies with, read as the Standard Webhooks reference
 * libraries read it: the `whsec_` prefix is optional and so is the base64 padding, because their
 * users paste secrets in either form and a verifier that quietly answers `false` for one of them
 * dead-letters every delivery. Everything else stays strict: the standard alphabet only, no
 * whitespace, not empty, no impossible length.
 */
export function decodeVerifierSecret(secret: unknown): Uint8Array | null {
  if (typeof secret !== 'string') return null;
  const text = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const tail = text.includes('=') ? '' : UNPADDED_TAIL[text.length % 4];
  return tail === null || tail === undefined ? null : decodeBase64(text + tail);
}
