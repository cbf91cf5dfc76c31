import { useEffect, useMemo, useState } from 'preact/hooks';
import type { DeliveryListFilter } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError } from '../api.js';
import { DeliveryTable } from '../components/delivery-table.js';
import { Notice } from '../components/notice.js';
import { useDeliveryList } from '../hooks.js';
import { href } from '../router.js';

/** Replay: a new delivery of a stored event (same envelope bytes) to the current endpoint, and the event's deliveries so far. */
export function ReplayPage({ api }: { api: DashboardApi }) {
  const [eventId, setEventId] = useState('');
  const [shown, setShown] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'error' | 'success'; text: string; deliveryId?: string } | null>(null);

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
      <form
        class="panel inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void replay();
        }}
      >
        <div class="field wide">
          <label for="p-event">Event id</label>
          <input id="p-event" required value={eventId} onInput={(event) => setEventId(event.currentTarget.value)} placeholder="evt_…" spellcheck={false} autocomplete="off" />
        </div>
        <button type="submit" class="primary" disabled={busy || eventId.trim() === ''}>
          {busy ? 'Replaying…' : 'Replay event'}
        </button>
      </form>
      {result && (
        <Notice kind={result.kind}>
          {result.text}
          {result.deliveryId && (
            <a href={href('deliveries', result.deliveryId)}>
              <code>{result.deliveryId}</code>
            </a>
          )}
        </Notice>
      )}
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
