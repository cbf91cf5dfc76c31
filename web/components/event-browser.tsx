import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Delivery, DeliveryListFilter, EventType } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { formatTime } from '../format.js';
import { useDeliveryList } from '../hooks.js';
import { EventTypeSelect } from './event-type-select.js';
import { Notice } from './notice.js';
import { Pager } from './pager.js';
import { StatusBadge } from './status-badge.js';

const PAGE_SIZE = 25;

/**
 * The events of one page of deliveries, newest first, each once: the delivery log is ordered by
 * time and carries each delivery's event, so it lists recent events without a second index (an
 * event replayed shows at its newest delivery).
 */
function eventsOf(deliveries: Delivery[]): Delivery[] {
  const seen = new Set<string>();
  return deliveries.filter((delivery) => {
    if (seen.has(delivery.eventId)) return false;
    seen.add(delivery.eventId);
    return true;
  });
}

export interface EventBrowserProps {
  api: DashboardApi;
  /** The event id chosen now (the replay form's field). */
  chosen: string;
  onChoose(eventId: string): void;
  /** Reloads the list when it changes (after a replay). */
  refreshKey: unknown;
}

/** Recent events to pick one from: a radio per event, filtered by type, paged like the log. */
export function EventBrowser({ api, chosen, onChoose, refreshKey }: EventBrowserProps) {
  const [eventType, setEventType] = useState('');
  const filter = useMemo<DeliveryListFilter>(() => ({ limit: PAGE_SIZE, ...(eventType ? { eventType: eventType as EventType } : {}) }), [eventType]);
  const list = useDeliveryList(api, filter);
  const { reload } = list;
  useEffect(() => reload(), [reload, refreshKey]);
  const events = list.rows ? eventsOf(list.rows) : null;

  return (
    <section class="panel" aria-labelledby="events-title">
      <h2 id="events-title">Recent events</h2>
      <p class="muted">Events of this project by their newest delivery, newest first. Choose one to replay it.</p>
      <div class="list-head">
        <div class="inline-form">
          <EventTypeSelect id="e-type" value={eventType} onChange={setEventType} />
        </div>
        <button type="button" class="secondary" onClick={list.reload} disabled={list.loading}>
          Refresh
        </button>
      </div>
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {events && events.length === 0 && <p class="empty">No events with deliveries yet.</p>}
      {events && events.length > 0 && (
        <div class="table-scroll">
          <table class="data events">
            <caption class="visually-hidden">Recent events, newest first</caption>
            <thead>
              <tr>
                <th scope="col" class="select">
                  <span class="visually-hidden">Choose</span>
                </th>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Newest delivery</th>
              </tr>
            </thead>
            <tbody>
              {events.map((delivery) => (
                <tr key={delivery.eventId} data-event-id={delivery.eventId} class={delivery.eventId === chosen ? 'open' : undefined}>
                  <td class="select" data-label="Choose">
                    <input type="radio" name="replay-event" id={`e-${delivery.id}`} checked={delivery.eventId === chosen} onChange={() => onChoose(delivery.eventId)} />
                  </td>
                  <td data-label="Event">
                    <label for={`e-${delivery.id}`} class="event-choice">
                      <code>{delivery.eventId}</code>
                    </label>
                  </td>
                  <td data-label="Type">{delivery.eventType}</td>
                  <td data-label="Newest delivery">
                    <StatusBadge status={delivery.status} />
                    <time dateTime={delivery.createdAt} title={delivery.createdAt} class="sub">
                      {formatTime(delivery.createdAt)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager list={list} label="Recent events" />
    </section>
  );
}
