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
 * A secret without the whitespace at its end: the newline a secret read from a file (or pasted)
 * keeps. Nothing else is forgiven: whitespace before or inside it still makes it malformed.
 *
 * The Standard Webhooks JavaScript reference (libraries/javascript, at b2fa7b8) does not trim: its
 * base64 decoder (@stablelib/base64 2.x) never reads the last character of a text one longer than a
 * multiple of four. So there one trailing character of any kind passes after a secret whose base64
 * has no `=` padding, and a newline is refused after one with padding, as Hookline's 32-byte secrets
 * have. Hookline ignores trailing whitespace alone, padded or not, and no other character.
 */
function withoutTrailingWhitespace(secret: string): string {
  return secret.replace(/[ \t\r\n]+$/, '');
}

/**
 * The HMAC key inside a `whsec_…` secret: the base64-decoded part, whitespace at the end aside.
 * `null` when the secret does not have the prefix or its base64 is malformed, so callers fail closed
 * instead of signing with garbage.
 */
export function decodeSecret(secret: unknown): Uint8Array | null {
  if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX)) return null;
  return decodeBase64(withoutTrailingWhitespace(secret.slice(SECRET_PREFIX.length)));
}

const UNPADDED_TAIL = ['', null, '==', '='] as const;

/**
 * The HMAC key of a secret a receiver verifies with, read as the Standard Webhooks reference
 * libraries read it: the `whsec_` prefix is optional and so is the base64 padding, because their
 * users paste secrets in either form and a verifier that quietly answers `false` for one of them
 * dead-letters every delivery. Whitespace at the end (a file's newline) is ignored too. Everything
 * else stays strict: the standard alphabet only, no other whitespace, not empty, no impossible length.
 */
export function decodeVerifierSecret(secret: unknown): Uint8Array | null {
  if (typeof secret !== 'string') return null;
  const trimmed = withoutTrailingWhitespace(secret);
  const text = trimmed.startsWith(SECRET_PREFIX) ? trimmed.slice(SECRET_PREFIX.length) : trimmed;
  const tail = text.includes('=') ? '' : UNPADDED_TAIL[text.length % 4];
  return tail === null || tail === undefined ? null : decodeBase64(text + tail);
}
