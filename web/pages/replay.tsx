import { useEffect, useMemo, useState } from 'preact/hooks';
import type { DeliveryListFilter } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError } from '../api.js';
import { DeliveryTable } from '../components/delivery-table.js';
import { EventBrowser } from '../components/event-browser.js';
import { DeliveryOutcomeNotice, Notice } from '../components/notice.js';
import type { DeliveryOutcome } from '../components/notice.js';
import { useDeliveryList } from '../hooks.js';

/**
 * Replay: pick a recent event (or type any event id), and send it again as a new delivery (same
 * envelope bytes) to the current endpoint; then the event's deliveries so far.
 */
export function ReplayPage({ api }: { api: DashboardApi }) {
  const [eventId, setEventId] = useState('');
  const [shown, setShown] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<DeliveryOutcome | null>(null);

  const replay = async () => {
    const id = eventId.trim();
    setBusy(true);
    setResult(null);
    try {
      const { deliveryId } = await api.client.replayEvent(id);
      setResult({ kind: 'success', text: `Replayed ${id} as a new delivery: `, deliveryId });
    } catch (caught) {
      setResult({ kind: 'error', text: describeError(caught) });
    } finally {
      setShown(id);
      setBusy(false);
    }
  };

  return (
    <div class="single">
      <h1 tabIndex={-1}>Replay an event</h1>
      <p class="muted">
        Sends a stored event again as a new delivery: the same envelope bytes (same event id and timestamp), to the endpoint configured now, signed with the current secrets, whatever event types the
        webhook takes now.
      </p>
      <EventBrowser api={api} chosen={eventId.trim()} onChoose={setEventId} refreshKey={result} />
      <form
        class="panel inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void replay();
        }}
      >
        <div class="field wide">
          <label for="p-event">Event id</label>
          <input id="p-event" required aria-describedby="p-event-hint" value={eventId} onInput={(event) => setEventId(event.currentTarget.value)} placeholder="evt_…" spellcheck={false} autocomplete="off" />
          <span id="p-event-hint" class="hint">
            Chosen from the list above, or any event id of this project.
          </span>
        </div>
        <button type="submit" class="primary" disabled={busy || eventId.trim() === ''}>
          {busy ? 'Replaying…' : 'Replay event'}
        </button>
      </form>
      {result && <DeliveryOutcomeNotice outcome={result} />}
      {shown && <EventDeliveries api={api} eventId={shown} refreshKey={result} />}
    </div>
  );
}

function EventDeliveries({ api, eventId, refreshKey }: { api: DashboardApi; eventId: string; refreshKey: unknown }) {
  const filter = useMemo<DeliveryListFilter>(() => ({ eventId, limit: 50 }), [eventId]);
  const list = useDeliveryList(api, filter);
  const { reload } = list;
  useEffect(() => reload(), [reload, refreshKey]);
  return (
    <section class="panel" aria-labelledby="event-deliveries-title">
      <h2 id="event-deliveries-title">
        Deliveries of <code>{eventId}</code>
      </h2>
      <div class="list-head">
        <span role="status">{list.loading ? 'Loading…' : ''}</span>
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
      </div>
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {list.rows && <DeliveryTable rows={list.rows} caption={`Deliveries of ${eventId}`} page="deliveries" openId={null} />}
    </section>
  );
}
