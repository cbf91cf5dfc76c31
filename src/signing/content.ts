import { toBytes } from './bytes.js';

/** The version tag in front of every signature candidate (`v1,<base64>`). */
export const SIGNATURE_VERSION = 'v1';

/** Candidates in one `webhook-signature` header are separated by a single space. */
export const CANDIDATE_SEPARATOR = ' ';

/**
 * The bytes Standard Webhooks signs: `<id>.<timestamp>.<raw body>`. The body is used as raw bytes,
 * never re-serialised, so what is signed is exactly what went over the wire.
 */
export function signedContent(id: string, timestamp: string, body: string | Uint8Array): Uint8Array {
  const prefix = toBytes(`${id}.${timestamp}.`);
  const payload = toBytes(body);
  const content = new Uint8Array(prefix.length + payload.length);
  content.set(prefix, 0);
  content.set(payload, prefix.length);
  return content;
}
