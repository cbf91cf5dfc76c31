import { randomBytes } from 'node:crypto';

/**
 * Ids that sort by creation time: `<prefix>_` + 10 base32 characters of milliseconds + 16 random
 * base32 characters. The alphabet is in ASCII order, so comparing ids as strings compares creation
 * times first; the log's newest-first order and its since/until bounds are plain key ranges.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;

export function encodeTime(ms: number): string {
  let out = '';
  let value = Math.max(0, Math.floor(ms));
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

export function decodeTime(id: string): number {
  const start = id.indexOf('_') + 1;
  let value = 0;
  for (let i = start; i < start + TIME_CHARS; i++) value = value * 32 + ALPHABET.indexOf(id[i] ?? '0');
  return value;
}

/** Random bytes drawn in bulk: one `randomBytes` call per 256 ids instead of one per id (hot path). */
const POOL_BYTES = RANDOM_CHARS * 256;
let pool = randomBytes(POOL_BYTES);
let poolOffset = 0;

function randomPart(): string {
  if (poolOffset + RANDOM_CHARS > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  let out = '';
  for (let i = 0; i < RANDOM_CHARS; i++) out += ALPHABET[pool[poolOffset + i]! & 31];
  poolOffset += RANDOM_CHARS;
  return out;
}

export function newSortableId(prefix: string, nowMs: number): string {
  return `${prefix}_${encodeTime(nowMs)}${randomPart()}`;
}

/** The smallest id string created at `ms` or later: a range bound for since/until queries. */
export function idLowerBound(prefix: string, ms: number): string {
  return `${prefix}_${encodeTime(ms)}`;
}

/** Id bounds of a time window: `fromId` included, `toId` excluded (from `idLowerBound` of since / until). */
export interface IdBounds {
  fromId?: string;
  toId?: string;
}

export function inIdBounds(id: string, { fromId, toId }: IdBounds): boolean {
  return (fromId === undefined || id >= fromId) && (toId === undefined || id < toId);
}

export const newDeliveryId = (nowMs: number): string => newSortableId('dlv', nowMs);
export const newEventId = (nowMs: number): string => newSortableId('evt', nowMs);
export const newProjectId = (nowMs: number): string => newSortableId('prj', nowMs);
