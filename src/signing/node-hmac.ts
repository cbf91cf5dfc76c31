import { Buffer } from 'node:buffer';
import * as crypto from 'node:crypto';
import type { HmacBackend } from './backend.js';
import { constantTimeEqual } from './bytes.js';

/** SHA-256 block size: HMAC pads (or first hashes) the key to this many bytes (RFC 2104). */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/** `.` between the id, the timestamp and the body in the signed content. */
const DOT = 0x2e;
/** The longest UTF-8 encoding of one UTF-16 code unit (a lone surrogate becomes U+FFFD, 3 bytes). */
const UTF8_BYTES_PER_UNIT = 3;
/**
 * Signed content up to this size is hashed from one reused buffer; larger content streams through
 * createHmac, where the fixed per-call cost no longer matters.
 */
const SCRATCH_MAX_BYTES = 256 * 1024;
const SCRATCH_MIN_BYTES = 4 * 1024;
/**
 * String bodies from this length on are measured first: when all ASCII, their UTF-8 is their latin1,
 * which V8 writes several times faster (64 KB: about 1.1 µs to measure and write against 3 µs).
 */
const ASCII_CHECK_MIN_LENGTH = 8 * 1024;

/**
 * One-shot `crypto.hash` (Node 20.12+ and 21.7+). Read off the namespace so that a node:crypto
 * without it still loads this module, and signs through createHmac.
 */
const oneShotHash: typeof crypto.hash | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** A key's HMAC pads, derived once and kept while the key object lives. */
interface KeyPads {
  /** A copy of the key the pads come from, to notice a caller reusing the array for another key. */
  readonly key: Uint8Array;
  /** K' XOR ipad: the first block of the inner hash's input. */
  readonly inner: Buffer;
  /** K' XOR opad, then room for the inner digest: the whole input of the outer hash. */
  readonly outer: Buffer;
}

/**
 * Pads by key object. The verifier keeps one key object per secret (its last 16 secrets), and a
 * weak map lets the pads go with the key.
 */
const padsByKey = new WeakMap<Uint8Array, KeyPads>();

function derivePads(key: Uint8Array): KeyPads {
  // RFC 2104: a key longer than the block is replaced by its hash, a shorter one is zero-padded.
  const blockKey = key.length > BLOCK_BYTES ? crypto.createHash('sha256').update(key).digest() : key;
  const inner = Buffer.alloc(BLOCK_BYTES, 0x36);
  const outer = Buffer.alloc(BLOCK_BYTES + DIGEST_BYTES, 0x5c);
  for (let i = 0; i < blockKey.length; i++) {
    inner[i] = 0x36 ^ blockKey[i]!;
    outer[i] = 0x5c ^ blockKey[i]!;
  }
  return { key: Uint8Array.from(key), inner, outer };
}

function padsFor(key: Uint8Array): KeyPads {
  const cached = padsByKey.get(key);
  if (cached && constantTimeEqual(cached.key, key)) return cached;
  const pads = derivePads(key);
  padsByKey.set(key, pads);
  return pads;
}

/** The inner hash's input buffer, reused by every call; grows by powers of two. */
let scratch: Buffer = Buffer.alloc(0);

function scratchOf(bytes: number): Buffer | null {
  if (bytes > SCRATCH_MAX_BYTES) return null;
  if (scratch.length < bytes) {
    let size = SCRATCH_MIN_BYTES;
    while (size < bytes) size *= 2;
    scratch = Buffer.allocUnsafeSlow(size);
  }
  return scratch;
}

function latin1ToBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/**
 * HMAC-SHA256 = H((K' ^ opad) || H((K' ^ ipad) || message)), as two one-shot `crypto.hash` calls
 * over per-key pads and one reused buffer. createHmac gives the same bytes, but in Node 20 building
 * its Hmac object (digest fetch, three contexts, JS wrapper) costs more than hashing a 1 KB body.
 * Hash.copy() of precomputed pad states was slower still (two wrapper objects per call). The hashes'
 * `latin1` string output is used because their Buffer output costs about 0.7 µs more per call.
 */
function hmacSha256(key: Uint8Array, id: string, timestamp: string, body: string | Uint8Array): Uint8Array {
  let bodyBytes: number;
  let bodyEncoding: 'utf8' | 'latin1' = 'utf8';
  if (typeof body !== 'string') {
    bodyBytes = body.byteLength;
  } else if (body.length < ASCII_CHECK_MIN_LENGTH) {
    bodyBytes = UTF8_BYTES_PER_UNIT * body.length;
  } else {
    bodyBytes = Buffer.byteLength(body, 'utf8');
    // Every code unit at or above 0x80 takes two or more UTF-8 bytes, so equal lengths mean ASCII.
    if (bodyBytes === body.length) bodyEncoding = 'latin1';
  }
  const bound = BLOCK_BYTES + UTF8_BYTES_PER_UNIT * (id.length + timestamp.length) + 2 + bodyBytes;
  const buffer = oneShotHash ? scratchOf(bound) : null;
  if (!oneShotHash || !buffer) {
    return crypto.createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  }

  const pads = padsFor(key);
  buffer.set(pads.inner, 0);
  let length = BLOCK_BYTES;
  length += buffer.write(id, length, 'utf8');
  buffer[length++] = DOT;
  length += buffer.write(timestamp, length, 'utf8');
  buffer[length++] = DOT;
  if (typeof body === 'string') {
    length += buffer.write(body, length, bodyEncoding);
  } else {
    buffer.set(body, length);
    length += body.byteLength;
  }
  // 'binary' is latin1: one character per byte, so a digest goes through a string unchanged.
  pads.outer.write(oneShotHash('sha256', buffer.subarray(0, length), 'binary'), BLOCK_BYTES, 'latin1');
  return latin1ToBytes(oneShotHash('sha256', pads.outer, 'binary'));
}

/**
 * The fast path: node:crypto hashes in native code. Both functions run in constant time in the
 * secret: OpenSSL's SHA-256 has no data-dependent branches or lookups, and `equal` is a full-length
 * XOR loop (timingSafeEqual does the same in C++, but copies each small on-heap array off the heap
 * first, which cost more than the loop).
 */
export const nodeHmacBackend = {
  name: 'node',
  sign: hmacSha256,
  equal: constantTimeEqual,
} as const satisfies HmacBackend;
