import { DELIVERY_STATUSES } from '../machines/index.js';
import type { DeliveryStatus } from '../machines/index.js';
import type { EventType } from '../sdk/types.js';
import { idLowerBound } from './ids.js';
import type { DeliveryRecord } from './records.js';
import type { HooklineStore } from './store.js';

export interface DeliveryQuery {
  status?: DeliveryStatus;
  eventType?: EventType;
  eventId?: string;
  /** Inclusive, ms. */
  since?: number;
  /** Exclusive, ms. */
  until?: number;
  limit: number;
  /** The id of the last delivery of the previous page. */
  cursor?: string;
}

export interface DeliveryPage {
  data: DeliveryRecord[];
  nextCursor: string | null;
}

/**
 * One page of a project's delivery log, newest first. Delivery ids sort by creation time, so the
 * order is the key order reversed, `since`/`until` are key bounds, and the cursor is the last id
 * returned: rows inserted after the first page are newer than any cursor and never shift a page.
 * Filters use the status index when given, else the event's delivery list, else the full range.
 */
export function queryDeliveries(store: HooklineStore, projectId: string, query: DeliveryQuery): DeliveryPage {
  const fromId = query.since !== undefined ? idLowerBound('dlv', query.since) : undefined;
  let toId = query.until !== undefined ? idLowerBound('dlv', query.until) : undefined;
  if (query.cursor !== undefined && (toId === undefined || query.cursor < toId)) toId = query.cursor;

  const data: DeliveryRecord[] = [];
  let more = false;
  for (const record of candidates(store, projectId, query, fromId, toId)) {
    if (query.status !== undefined && record.status !== query.status) continue;
    if (query.eventType !== undefined && record.eventType !== query.eventType) continue;
    if (query.eventId !== undefined && record.eventId !== query.eventId) continue;
    if (data.length === query.limit) {
      more = true;
      break;
    }
    data.push(record);
  }
  return { data, nextCursor: more ? data[data.length - 1]!.id : null };
}

function* candidates(store: HooklineStore, projectId: string, query: DeliveryQuery, fromId: string | undefined, toId: string | undefined): Generator<DeliveryRecord> {
  const inBounds = (id: string) => (fromId === undefined || id >= fromId) && (toId === undefined || id < toId);
  if (query.eventId !== undefined) {
    const ids = store.getEvent(projectId, query.eventId)?.deliveryIds ?? [];
    for (const id of [...ids].sort().reverse()) {
      const record = inBounds(id) ? store.getDelivery(projectId, id) : undefined;
      if (record) yield record;
    }
    return;
  }
  if (query.status !== undefined) {
    for (const id of store.deliveryIdsByStatus(projectId, query.status, { ...(fromId ? { fromId } : {}), ...(toId ? { toId } : {}) })) {
      const record = store.getDelivery(projectId, id);
      if (record) yield record;
    }
    return;
  }
  for (const { key, value } of store.deliveries.getRange({ start: [projectId, toId ?? '\uffff'], end: [projectId, fromId ?? ''], reverse: true })) {
    if (toId !== undefined && key[1] >= toId) continue;
    yield value;
  }
}

/**
 * How many of a project's deliveries are in each status, counted on the status index (`getCount`
 * over `[projectId, status, …]`; no record is read). Cost grows with the count, not the project.
 */
export function countDeliveriesByStatus(store: HooklineStore, projectId: string): Record<DeliveryStatus, number> {
  const counts = {} as Record<DeliveryStatus, number>;
  for (const status of DELIVERY_STATUSES) {
    counts[status] = store.deliveriesByStatus.getCount({ start: [projectId, status, ''], end: [projectId, status, '\uffff'] });
  }
  return counts;
}

/**
 * How many dead letters a redrive with this filter would start again (its dry run). Without an
 * event type this is a count on the status index; with one, each record in the range is read.
 */
export function countDeadLetters(store: HooklineStore, projectId: string, filter: { fromId?: string; toId?: string; eventType?: string }): number {
  if (filter.eventType === undefined) {
    return store.deliveriesByStatus.getCount({ start: [projectId, 'dead_lettered', filter.fromId ?? ''], end: [projectId, 'dead_lettered', filter.toId ?? '\uffff'] });
  }
  let count = 0;
  for (const id of store.deliveryIdsByStatus(projectId, 'dead_lettered', filter)) {
    if (store.getDelivery(projectId, id)?.eventType === filter.eventType) count++;
  }
  return count;
}
