import { useState } from 'preact/hooks';
import type { DeliveryListFilter, DeliveryStatus, EventType } from '../../src/sdk/types.js';
import { DELIVERY_STATUSES } from '../../src/sdk/types.js';
import { EventTypeSelect } from './event-type-select.js';
import { localInputToIso, statusLabel } from '../format.js';

interface Draft {
  status: string;
  eventType: string;
  eventId: string;
  since: string;
  until: string;
  limit: string;
}

const EMPTY: Draft = { status: '', eventType: '', eventId: '', since: '', until: '', limit: '25' };

/** The draft as the API's filter: empty fields left out, local times as ISO 8601. */
function toFilter(draft: Draft): DeliveryListFilter {
  const since = localInputToIso(draft.since);
  const until = localInputToIso(draft.until);
  return {
    ...(draft.status ? { status: draft.status as DeliveryStatus } : {}),
    ...(draft.eventType ? { eventType: draft.eventType as EventType } : {}),
    ...(draft.eventId.trim() ? { eventId: draft.eventId.trim() } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    limit: Number(draft.limit) || 25,
  };
}

export const DEFAULT_FILTER: DeliveryListFilter = toFilter(EMPTY);

/** The log API's filters (status, event type, event id, since, until, page size); applied on submit. */
export function DeliveryFilters({ onApply }: { onApply(filter: DeliveryListFilter): void }) {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const set = (name: keyof Draft) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });
  return (
    <form
      class="filters"
      aria-label="Filter deliveries"
      onSubmit={(event) => {
        event.preventDefault();
        onApply(toFilter(draft));
      }}
    >
      <div class="form-grid">
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={draft.status} onChange={set('status')}>
            <option value="">any</option>
            {DELIVERY_STATUSES.map((status) => (
              <option key={status} value={status}>
                {statusLabel(status)}
              </option>
            ))}
          </select>
        </div>
        <EventTypeSelect id="f-type" value={draft.eventType} onChange={(eventType) => setDraft({ ...draft, eventType })} />
        <div class="field">
          <label for="f-event">Event id</label>
          <input id="f-event" value={draft.eventId} onInput={set('eventId')} placeholder="evt_…" spellcheck={false} />
        </div>
        <div class="field">
          <label for="f-since">Since (local time)</label>
          <input id="f-since" type="datetime-local" step={1} value={draft.since} onInput={set('since')} />
        </div>
        <div class="field">
          <label for="f-until">Until (local time)</label>
          <input id="f-until" type="datetime-local" step={1} value={draft.until} onInput={set('until')} />
        </div>
        <div class="field narrow">
          <label for="f-limit">Per page</label>
          <input id="f-limit" type="number" min={1} max={250} value={draft.limit} onInput={set('limit')} />
        </div>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setDraft(EMPTY);
            onApply(toFilter(EMPTY));
          }}
        >
          Clear
        </button>
      </div>
    </form>
  );
}
