import type { EventType } from '../sdk/types.js';
import type { EventRecord } from './records.js';
import type { HooklineStore } from './store.js';

export interface EventQuery {
  eventType?: EventType;
  limit: number;
  /** The id of the last event of the previous page. */
  cursor?: string;
}

export interface EventPage {
  data: EventRecord[];
  nextCursor: string | null;
}

/**
 * One page of a project's stored events, newest first: the key order (`[projectId, eventId]`)
 * reversed, as `queryDeliveries` pages deliveries. Ids Hookline makes sort by acceptance time; an id
 * a producer gave (`evt_…` of its own) sorts by its text among them. The cursor is the last id
 * returned and the next page starts strictly below it, so events stored while a client pages never
 * shift a page: none is returned twice, and every event stored before the first page is returned.
 */
export function queryEvents(store: HooklineStore, projectId: string, query: EventQuery): EventPage {
  const data: EventRecord[] = [];
  let more = false;
  for (const { key, value } of store.events.getRange({ start: [projectId, query.cursor ?? '\uffff'], end: [projectId, ''], reverse: true })) {
    // The range's start is inclusive: the cursor itself was on the previous page.
    if (query.cursor !== undefined && key[1] >= query.cursor) continue;
    if (query.eventType !== undefined && value.type !== query.eventType) continue;
    if (data.length === query.limit) {
      more = true;
      break;
    }
    data.push(value);
  }
  return { data, nextCursor: more ? data[data.length - 1]!.id : null };
}
