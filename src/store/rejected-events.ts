import type { Database } from 'lmdb';
import type { RejectedEventRecord } from './records.js';

/** The `rejected-events` table, keyed by project and id. */
export type RejectedEventsTable = Database<RejectedEventRecord, [projectId: string, id: string]>;

/** Rejected events of one project (or of all, when projectId is null), newest first, before `beforeId`. */
export function listRejectedEvents(rejectedEvents: RejectedEventsTable, projectId: string | null, limit: number, beforeId?: string): RejectedEventRecord[] {
  if (projectId === null) return listAllRejectedEvents(rejectedEvents, limit, beforeId);
  const range = rejectedEvents.getRange({ start: [projectId, beforeId ?? '\uffff'], end: [projectId, ''], reverse: true });
  const page: RejectedEventRecord[] = [];
  for (const { value } of range) {
    if (beforeId !== undefined && value.id >= beforeId) continue;
    page.push(value);
    if (page.length === limit) break;
  }
  return page;
}

/**
 * Every project's rejected events, newest first. Keys sort by project before id, so a key-order
 * scan is not time order (and a cursor over it would skip other projects' records): keep the
 * `limit` newest ids below the cursor over one pass instead (an admin diagnostic, not a hot path).
 */
function listAllRejectedEvents(rejectedEvents: RejectedEventsTable, limit: number, beforeId?: string): RejectedEventRecord[] {
  let newest: RejectedEventRecord[] = [];
  const byIdDescending = (a: RejectedEventRecord, b: RejectedEventRecord) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  for (const { value } of rejectedEvents.getRange()) {
    if (beforeId !== undefined && value.id >= beforeId) continue;
    newest.push(value);
    if (newest.length >= 2 * limit) newest = newest.sort(byIdDescending).slice(0, limit);
  }
  return newest.sort(byIdDescending).slice(0, limit);
}
