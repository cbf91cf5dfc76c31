import { Buffer } from 'node:buffer';
import * as crypto from 'node:crypto';
import type { HmacBackend } from './backend.js';

/** SHA-256 block size: HMAC pads (or hashes) the key to this many bytes (RFC 2104). */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/** `.` between the id, the timestamp and the body in the signed content. */
const DOT = 0x2e;
/** The largest UTF-8 encoding of one UTF-16 code unit (a lone surrogate becomes U+FFFD, 3 bytes). */
const UTF8_BYTES_PER_UNIT = 3;
/**
 * Messages up to this size are hashed from one reused buffer; larger ones stream through createHmac,
 * where the fixed per-call cost no longer matters.
 */
const SCRATCH_MAX_BYTES = 256 * 1024;
const SCRATCH_MIN_BYTES = 4 * 1024;

/**
 * One-shot `crypto.hash` (Node 20.12+, 21.7+). Read off the namespace so an older Node or another
 * runtime's node:crypto without it still loads this module and takes the createHmac path.
 */
const oneShotHash: typeof crypto.hash | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** A key's HMAC pads, derived once and kept while the key object lives. */
interface KeyPads {
  /** The key bytes the pads were derived from, to notice a caller reusing the array for another key. */
  readonly key: Uint8Array;
  /** K' XOR ipad, the first block of the inner hash's input. */
  readonly inner: Buffer;
  /** K' XOR opad followed by room for the inner digest: the whole outer hash input. */
  readonly outer: Buffer;
}

const padsByKey = new WeakMap<Uint8Array, KeyPads>();

function derivePads(key: Uint8Array): KeyPads {
  // RFC 2104: a key longer than the block is replaced by its hash; a shorter one is zero-padded.
  const blockKey = key.length > BLOCK_BYTES ? crypto.createHash('sha256').update(key).digest() : key;
  const inner = Buffer.alloc(BLOCK_BYTES, 0x36);
  const outer = Buffer.alloc(BLOCK_BYTES + DIGEST_BYTES, 0x5c);
  for (let i = 0; i < blockKey.length; i++) {
    inner[i] = 0x36 ^ blockKey[i]!;
    outer[i] = 0x5c ^ blockKey[i]!;
  }
  return { key: Uint8Array.from(key), inner, outer };
}

/** Same length and bytes, in time that does not depend on where they differ. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

function padsFor(key: Uint8Array): KeyPads {
  const cached = padsByKey.get(key);
  if (cached && sameBytes(cached.key, key)) return cached;
  const pads = derivePads(key);
  padsByKey.set(key, pads);
  return pads;
}

/** Reused input buffer for the inner hash; grows by powers of two up to SCRATCH_MAX_BYTES. */
let scratch: Buffer = Buffer.alloc(0);

/** An upper bound of the signed content's UTF-8 size, exact when that matters for the scratch cap. */
function contentBytesBound(id: string, timestamp: string, body: string | Uint8Array): number {
  const prefix = UTF8_BYTES_PER_UNIT * (id.length + timestamp.length) + 2;
  if (typeof body !== 'string') return prefix + body.byteLength;
  const bound = UTF8_BYTES_PER_UNIT * body.length;
  return prefix + (BLOCK_BYTES + prefix + bound <= SCRATCH_MAX_BYTES ? bound : Buffer.byteLength(body));
}

function scratchOf(bytes: number): Buffer | null {
  if (bytes > SCRATCH_MAX_BYTES) return null;
  if (scratch.length < bytes) {
    let size = SCRATCH_MIN_BYTES;
    while (size < bytes) size *= 2;
    scratch = Buffer.allocUnsafeSlow(Math.min(size, SCRATCH_MAX_BYTES));
  }
  return scratch;
}

function latin1ToBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/**
 * HMAC-SHA256 = H((K' ^ opad) || H((K' ^ ipad) || message)), computed with two one-shot
 * `crypto.hash` calls over buffers prepared in advance. createHmac gives the same bytes, but in
 * Node 20 building its Hmac object (digest fetch, context allocation, JS wrapper) costs more than
 * hashing a 1 KB body; the one-shot calls skip all of that, and their `latin1` string output is
 * cheaper than a Buffer. Both hashes run in OpenSSL, branch-free in the data.
 */
function hmacSha256(key: Uint8Array, id: string, timestamp: string, body: string | Uint8Array): Uint8Array {
  const buffer = oneShotHash && scratchOf(BLOCK_BYTES + contentBytesBound(id, timestamp, body));
  if (!oneShotHash || !buffer) return crypto.createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  const pads = padsFor(key);
  buffer.set(pads.inner, 0);
  let length = BLOCK_BYTES;
  length += buffer.write(id, length, 'utf8');
  buffer[length++] = DOT;
  length += buffer.write(timestamp, length, 'utf8');
  buffer[length++] = DOT;
  if (typeof body === 'string') {
    length += buffer.write(body, length, 'utf8');
  } else {
    buffer.set(body, length);
    length += body.byteLength;
  }
  // 'binary' is latin1: one character per byte, so the digest round-trips exactly.
  pads.outer.write(oneShotHash('sha256', buffer.subarray(0, length), 'binary'), BLOCK_BYTES, 'latin1');
  return latin1ToBytes(oneShotHash('sha256', pads.outer, 'binary'));
}

/** The fast path: node:crypto hashes in native code, from per-key pads and one reused buffer. */
export const nodeHmacBackend = {
  name: 'node',
  sign(key: Uint8Array, id: string, timestamp: string, body: string | Uint8Array): Uint8Array {
    return hmacSha256(key, id, timestamp, body);
  },
  equal: sameBytes,
} as const satisfies HmacBackend;
