/**
 * Byte helpers that work on every runtime (Node, Deno, Bun, browsers, workers): no `Buffer`,
 * so the SDK stays usable where `node:buffer` does not exist.
 */

const textEncoder = new TextEncoder();

/** UTF-8 bytes of a string; a Uint8Array (Buffer included) is returned as it is. */
export function toBytes(value: string | Uint8Array): Uint8Array {
  return typeof value === 'string' ? textEncoder.encode(value) : value;
}

const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict standard base64 (with padding) to bytes; `null` for anything malformed or empty. */
export function decodeBase64(text: string): Uint8Array | null {
  if (text.length === 0 || !BASE64_PATTERN.test(text)) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function encodeBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary);
}

/**
 * Compares two byte arrays in time that depends only on their length, never on where they differ.
 * The length of an HMAC-SHA256 is public (32), so an early exit on length leaks nothing.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}
