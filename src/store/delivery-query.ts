import { DELIVERY_STATUSES } from '../machines/index.js';
import type { DeliveryStatus } from '../machines/index.js';
import type { EventType } from '../sdk/types.js';
import { idLowerBound, inIdBounds } from './ids.js';
import type { IdBounds } from './ids.js';
import { withChanges } from './delivery-model.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord } from './records.js';
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

/** What a project's actor holds in memory and has not stored yet, which a read shows. */
export interface UnstoredSteps {
  /** Steps of a delivery made in memory and not yet stored. */
  changes(deliveryId: string): readonly DeliveryChange[];
  /** Ids of the live deliveries shown in `status` while the index still holds another one. */
  idsShownAs(status: DeliveryStatus): string[];
}

const nothingUnstored: UnstoredSteps = { changes: () => [], idsShownAs: () => [] };

/**
 * One page of a project's delivery log, newest first. Delivery ids sort by creation time, so the
 * order is the key order reversed, `since`/`until` are key bounds, and the cursor is the last id
 * returned: rows inserted after the first page are newer than any cursor and never shift a page.
 * Filters use the status index when given, else the event's delivery list, else the full range.
 * Filters read heads; only the records of the page are assembled with their logs.
 *
 * A delivery whose attempt is in flight is stored `pending` or `retrying` until the attempt's
 * outcome is written with it (one commit per attempt); `unstored` gives the steps its actor holds,
 * so that the page shows it `delivering`, as a read did when every step was a commit of its own.
 * The same holds for an outcome (`succeeded`, `dead_lettered`, …) a read already shows while its
 * commit is on its way: a status filter finds such deliveries through the actor, not the index.
 */
export function queryDeliveries(store: HooklineStore, projectId: string, query: DeliveryQuery, unstored: UnstoredSteps = nothingUnstored): DeliveryPage {
  const fromId = query.since !== undefined ? idLowerBound('dlv', query.since) : undefined;
  let toId = query.until !== undefined ? idLowerBound('dlv', query.until) : undefined;
  if (query.cursor !== undefined && (toId === undefined || query.cursor < toId)) toId = query.cursor;

  const heads: DeliveryHead[] = [];
  let more = false;
  for (const head of candidates(store, projectId, query, fromId, toId, unstored)) {
    if (query.status !== undefined && (unstored.changes(head.id).at(-1)?.status ?? head.status) !== query.status) continue;
    if (query.eventType !== undefined && head.eventType !== query.eventType) continue;
    if (query.eventId !== undefined && head.eventId !== query.eventId) continue;
    if (heads.length === query.limit) {
      more = true;
      break;
    }
    heads.push(head);
  }
  const data = heads.map((head) => withChanges(store.assemble(projectId, head), unstored.changes(head.id)));
  return { data, nextCursor: more ? data[data.length - 1]!.id : null };
}

function* candidates(
  store: HooklineStore,
  projectId: string,
  query: DeliveryQuery,
  fromId: string | undefined,
  toId: string | undefined,
  unstored: UnstoredSteps,
): Generator<DeliveryHead> {
  const bounds = { ...(fromId ? { fromId } : {}), ...(toId ? { toId } : {}) };
  const inBounds = (id: string) => inIdBounds(id, bounds);
  if (query.eventId !== undefined) {
    const ids = store.getEvent(projectId, query.eventId)?.deliveryIds ?? [];
    for (const id of [...ids].sort().reverse()) {
      const head = inBounds(id) ? store.getDeliveryHead(projectId, id) : undefined;
      if (head) yield head;
    }
    return;
  }
  if (query.status !== undefined) {
    const shownOnly = unstored.idsShownAs(query.status).filter(inBounds).sort().reverse();
    for (const id of newestFirst([store.deliveryIdsByStatus(projectId, query.status, bounds), shownOnly.values()])) {
      const head = store.getDeliveryHead(projectId, id);
      if (head) yield head;
    }
    return;
  }
  for (const { key, value } of store.deliveries.getRange({ start: [projectId, toId ?? '\uffff'], end: [projectId, fromId ?? ''], reverse: true })) {
    if (toId !== undefined && key[1] >= toId) continue;
    yield value;
  }
}

/** Merges id sequences that are each newest first into one, newest first, each id once. */
function* newestFirst(sequences: Array<Iterator<string>>): Generator<string> {
  const heads = sequences.map((sequence) => ({ sequence, next: sequence.next() }));
  let previous: string | undefined;
  for (;;) {
    let newest: (typeof heads)[number] | undefined;
    for (const head of heads) if (!head.next.done && (!newest || head.next.value > (newest.next.value as string))) newest = head;
    if (!newest) return;
    const id = newest.next.value as string;
    if (id !== previous) yield id;
    previous = id;
    newest.next = newest.sequence.next();
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

/** Which dead letters a redrive takes: a window of delivery ids, and an event type. */
export interface DeadLetterFilter extends IdBounds {
  eventType?: string;
}

/**
 * How many stored dead letters match the filter (a redrive's dry run when the project has no actor,
 * hence no dead-lettering still unstored). Without an event type this is a count on the status
 * index; with one, each record in the range is read.
 */
export function countDeadLetters(store: HooklineStore, projectId: string, filter: DeadLetterFilter): number {
  if (filter.eventType === undefined) {
    return store.deliveriesByStatus.getCount({ start: [projectId, 'dead_lettered', filter.fromId ?? ''], end: [projectId, 'dead_lettered', filter.toId ?? '\uffff'] });
  }
  let count = 0;
  for (const id of store.deliveryIdsByStatus(projectId, 'dead_lettered', filter)) {
    if (store.getDeliveryHead(projectId, id)?.eventType === filter.eventType) count++;
  }
  return count;
}
