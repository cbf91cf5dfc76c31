import { useEffect, useMemo, useState } from 'preact/hooks';
import type { DeliveryListFilter, EventType } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError } from '../api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DeliveryDetailPanel } from '../components/delivery-detail.js';
import { DeliveryTable } from '../components/delivery-table.js';
import { EventTypeSelect } from '../components/event-type-select.js';
import { Notice } from '../components/notice.js';
import { Pager } from '../components/pager.js';
import { useDeliveryList } from '../hooks.js';
import { localInputToIso } from '../format.js';
import { href } from '../router.js';

const DEAD_LETTERS: DeliveryListFilter = { status: 'dead_lettered', limit: 25 };

type Result = { kind: 'error' | 'success'; text: string } | null;

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** Dead letters: retry one, select and retry, or redrive every one a filter matches (counted first, then confirmed). */
export function DeadLettersPage({ api, openId }: { api: DashboardApi; openId: string | null }) {
  const list = useDeliveryList(api, DEAD_LETTERS);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result>(null);
  const [changes, setChanges] = useState(0);

  // A selection only ever holds rows on screen.
  useEffect(() => {
    const onScreen = new Set(list.rows?.map((row) => row.id) ?? []);
    setSelected((current) => new Set([...current].filter((id) => onScreen.has(id))));
  }, [list.rows]);

  const changed = () => {
    list.reload();
    setChanges((n) => n + 1);
  };

  const retry = async (ids: string[]) => {
    setBusy(true);
    setResult(null);
    const outcomes = await Promise.allSettled(ids.map((id) => api.client.retryDelivery(id)));
    const failures = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [`${ids[index]}: ${describeError(outcome.reason)}`] : []));
    const retried = ids.length - failures.length;
    setResult(
      failures.length === 0
        ? { kind: 'success', text: `Retried ${plural(retried, 'delivery', 'deliveries')}: each starts a new round of attempts.` }
        : { kind: 'error', text: `Retried ${retried} of ${ids.length}. ${failures.join(' ')}` },
    );
    setSelected(new Set());
    setBusy(false);
    changed();
  };

  const selection = {
    selected,
    toggle: (id: string, on: boolean) => setSelected((current) => {
      const next = new Set(current);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    }),
    toggleAll: (ids: string[], on: boolean) => setSelected(on ? new Set(ids) : new Set()),
  };

  return (
    <div class={openId ? 'split' : 'single'}>
      <div class="list-column">
        <h1 tabIndex={-1}>Dead letters</h1>
        <p class="muted">Deliveries whose every attempt failed. A retry or a redrive starts a new round of attempts on the same schedule.</p>
        {result && <Notice kind={result.kind}>{result.text}</Notice>}
        <div class="list-head">
          <span role="status">{list.loading ? 'Loading…' : list.rows ? `${list.rows.length} on this page, ${selected.size} selected` : ''}</span>
          <div class="actions">
            <button type="button" class="primary" disabled={busy || selected.size === 0} onClick={() => void retry([...selected])}>
              Retry selected ({selected.size})
            </button>
            <button type="button" class="secondary" onClick={changed} disabled={list.loading}>
              Refresh
            </button>
          </div>
        </div>
        {list.error && <Notice kind="error">{list.error}</Notice>}
        {list.rows && (
          <DeliveryTable
            rows={list.rows}
            caption="Dead-lettered deliveries, newest first"
            page="dead-letters"
            openId={openId}
            selection={selection}
            actions={(row) => (
              <button type="button" class="secondary small" disabled={busy} onClick={() => void retry([row.id])} aria-label={`Retry ${row.id}`}>
                Retry
              </button>
            )}
          />
        )}
        <Pager list={list} label="Dead letters" />
        <RedriveByFilter api={api} refreshKey={changes} onRedriven={changed} />
      </div>
      {openId && <DeliveryDetailPanel api={api} id={openId} closeHref={href('dead-letters')} onChanged={changed} />}
    </div>
  );
}

function RedriveByFilter({ api, refreshKey, onRedriven }: { api: DashboardApi; refreshKey: number; onRedriven(): void }) {
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [eventType, setEventType] = useState('');
  const [preview, setPreview] = useState<number | null>(null);
  const [fits, setFits] = useState(true);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result>(null);

  const filter = useMemo(() => {
    const from = localInputToIso(since);
    const to = localInputToIso(until);
    return { ...(from ? { since: from } : {}), ...(to ? { until: to } : {}), ...(eventType ? { eventType: eventType as EventType } : {}) };
  }, [since, until, eventType]);

  // The count follows the filter (debounced) and every change on the page.
  useEffect(() => {
    const controller = new AbortController();
    setPreview(null);
    const timer = setTimeout(() => {
      api
        .previewRedrive(filter, controller.signal)
        .then(({ count, fits }) => {
          setPreview(count);
          setFits(fits);
          setPreviewError(null);
        })
        .catch((caught: unknown) => {
          if (!controller.signal.aborted) setPreviewError(describeError(caught));
        });
    }, 200);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [api, filter, refreshKey]);

  const redrive = async () => {
    setBusy(true);
    try {
      const { redriven } = await api.client.redriveDeadLetters(filter);
      setResult({ kind: 'success', text: `Redrove ${plural(redriven, 'dead letter')}: each starts a new round of attempts now.` });
      onRedriven();
    } catch (caught) {
      setResult({ kind: 'error', text: describeError(caught) });
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  const matches =
    preview === null
      ? 'Counting the dead letters that match…'
      : `${plural(preview, 'dead letter')} ${preview === 1 ? 'matches' : 'match'} this filter.${fits ? '' : ' That is more than the project has room for now (HOOKLINE_MAX_WAITING_PER_PROJECT), so a redrive would start none: narrow the range or the type, or wait for waiting deliveries to finish.'}`;
  return (
    <section class="panel redrive" aria-labelledby="redrive-title">
      <h2 id="redrive-title">Redrive by filter</h2>
      <p class="muted">Every dead letter created in the range (and of the type, if one is chosen) gets a new round of attempts. Leave the fields empty to redrive them all.</p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setResult(null);
          setConfirming(true);
        }}
      >
        <div class="form-grid">
          <div class="field">
            <label for="r-since">Created since (local time)</label>
            <input id="r-since" type="datetime-local" step={1} value={since} onInput={(event) => setSince(event.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="r-until">Created before (local time)</label>
            <input id="r-until" type="datetime-local" step={1} value={until} onInput={(event) => setUntil(event.currentTarget.value)} />
          </div>
          <EventTypeSelect id="r-type" value={eventType} onChange={setEventType} />
        </div>
        <p class="preview" role="status" aria-live="polite" data-preview={preview ?? ''}>
          {previewError ?? matches}
        </p>
        <button type="submit" class="primary" disabled={!preview || !fits || busy}>
          Redrive{preview ? ` ${plural(preview, 'dead letter')}` : ''}…
        </button>
      </form>
      {result && <Notice kind={result.kind}>{result.text}</Notice>}
      <ConfirmDialog
        open={confirming}
        title={`Redrive ${plural(preview ?? 0, 'dead letter')}?`}
        confirmLabel={`Redrive ${preview ?? 0}`}
        busy={busy}
        onConfirm={() => void redrive()}
        onCancel={() => setConfirming(false)}
      >
        <p>
          {plural(preview ?? 0, 'dead-lettered delivery', 'dead-lettered deliveries')} will be sent to the configured endpoint again, each with a new round of attempts. Receivers see the same
          <code> webhook-id</code> as before.
        </p>
        <p class="muted">
          {since || until || eventType
            ? `Filter: ${[since && `created since ${since}`, until && `created before ${until}`, eventType && `type ${eventType}`].filter(Boolean).join(', ')}.`
            : 'No filter: every dead letter of this project.'}
        </p>
      </ConfirmDialog>
    </section>
  );
}
