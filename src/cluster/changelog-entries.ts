import { pack, unpackMultiple } from 'msgpackr';
import type { ChangelogEntry, DeliverySteps } from '../store/changelog-restore.js';

/**
 * A partition changelog's entries as its batch and snapshot messages hold them: a msgpack sequence
 * of `[kind token, projectId, record]`.
 */

export type ChangelogRecord = ChangelogEntry;

/** What a restore hands on: records, a delivery's steps applied to it. */
export type RestoredChange = Exclude<ChangelogRecord, { kind: 'steps' }>;

/**
 * Records a pass over a whole partition (a restore's, a snapshot's) handles in one turn of the event
 * loop: in one go, 30,000 deliveries with their steps held it for 200 ms (bench:changelog).
 */
export const RECORDS_PER_TURN = 5_000;

export const KIND_TOKEN = { delivery: 'd', event: 'e', webhook: 'w', steps: 's' } as const;
const TOKEN_KIND = { d: 'delivery', e: 'event', w: 'webhook', s: 'steps' } as const;
export type KindToken = keyof typeof TOKEN_KIND;

/** Hands `visit` the changes of a batch's entries; returns how many entries it read. */
export function visitEntries(entries: unknown[], visit: (change: ChangelogRecord) => void): number {
  for (const entry of entries) {
    const change = decodeEntry(entry);
    if (change) visit(change);
  }
  return entries.length;
}

/** `visitEntries` for a batch message's data: a msgpack sequence of entries. */
export function visitBatch(data: Uint8Array, visit: (change: ChangelogRecord) => void): number {
  return visitEntries(unpackMultiple(data) as unknown[], visit);
}

/** The changes packed as batch entries, one at a time. */
export function* packed(changes: Iterable<ChangelogRecord>): Generator<Buffer> {
  for (const change of changes) yield pack(entryOf(change));
}

/** A record as a batch holds it: `[kind token, projectId, record]`. */
export function entryOf(change: ChangelogRecord): [KindToken, string, unknown] {
  return [KIND_TOKEN[change.kind], change.projectId, change.record];
}

/** Identifies a record within its partition: two versions of it share the key (steps: the same first transition). */
export function recordKey(change: ChangelogRecord): string {
  if (change.kind === 'webhook') return `w.${change.projectId}`;
  const key = `${KIND_TOKEN[change.kind]}.${change.projectId}.${change.record.id}`;
  return change.kind === 'steps' ? `${key}.${change.record.changes[0]?.transitionIndex ?? 0}` : key;
}

/** A `[kind token, projectId, record]` entry as a change, or null when it is not one. */
export function decodeEntry(entry: unknown): ChangelogRecord | null {
  if (!Array.isArray(entry) || entry.length !== 3) return null;
  const [token, projectId, record] = entry as [unknown, unknown, unknown];
  const kind = TOKEN_KIND[token as KindToken];
  if (!kind || typeof projectId !== 'string' || projectId === '' || record === null || typeof record !== 'object') return null;
  if (kind === 'steps' && !(Array.isArray((record as DeliverySteps).changes) && (record as DeliverySteps).changes.length > 0)) return null;
  return { kind, projectId, record } as ChangelogRecord;
}
