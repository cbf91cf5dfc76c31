import { useEffect, useRef, useState } from 'preact/hooks';
import type { DeliveryDetail } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError, isHooklineApiError } from '../api.js';
import { formatGap, formatTime, snippet } from '../format.js';
import { usePolling } from '../hooks.js';
import { DeliveryOutcomeNotice, Notice } from './notice.js';
import type { DeliveryOutcome } from './notice.js';
import { StatusBadge } from './status-badge.js';

export interface DeliveryDetailPanelProps {
  api: DashboardApi;
  id: string;
  /** Where "Close" goes: the list without a delivery open. */
  closeHref: string;
  /** Called after a retry or replay changed the log, so the list reloads. */
  onChanged(): void;
}

/** One delivery: its facts, every attempt with the receiver's answer, and its path through the machine. Refreshes itself. */
export function DeliveryDetailPanel({ api, id, closeHref, onChanged }: DeliveryDetailPanelProps) {
  const [detail, setDetail] = useState<DeliveryDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<DeliveryOutcome | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    setDetail(null);
    setError(null);
    setNotice(null);
    heading.current?.focus();
  }, [id]);

  usePolling(
    async (signal) => {
      try {
        setDetail(await api.client.getDelivery(id, { signal }));
        setError(null);
      } catch (caught) {
        if (signal.aborted) return;
        setError(isHooklineApiError(caught) && caught.status === 404 ? `There is no delivery ${id} in this project.` : describeError(caught));
      }
    },
    2_000,
    [api, id],
  );

  const act = async (action: 'retry' | 'replay') => {
    if (!detail) return;
    setBusy(true);
    setNotice(null);
    try {
      if (action === 'retry') {
        const retried = await api.client.retryDelivery(id);
        setDetail({ ...detail, ...retried });
        setNotice({ kind: 'success', text: `Retry started: the delivery is ${retried.status.replace('_', ' ')} again.` });
      } else {
        const { deliveryId } = await api.client.replayEvent(detail.eventId);
        setNotice({ kind: 'success', text: `Replayed ${detail.eventId} as a new delivery: `, deliveryId });
      }
      onChanged();
    } catch (caught) {
      setNotice({ kind: 'error', text: describeError(caught) });
    } finally {
      setBusy(false);
    }
  };

  const retryable = detail !== null && (detail.status === 'dead_lettered' || detail.status === 'retrying');
  const first = detail?.transitions[0];
  return (
    <section class="detail panel" aria-labelledby="detail-title">
      <div class="detail-head">
        <h2 id="detail-title" tabIndex={-1} ref={heading}>
          Delivery <code>{id}</code>
        </h2>
        <a class="button secondary" href={closeHref}>
          Close
        </a>
      </div>
      {error && <Notice kind="error">{error}</Notice>}
      {detail && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={detail.status} />
            </dd>
            <dt>Event</dt>
            <dd>
              <code>{detail.eventId}</code>
            </dd>
            <dt>Event type</dt>
            <dd>{detail.eventType}</dd>
            <dt>Attempts</dt>
            <dd>
              {detail.attempts} (this round ends at {detail.maxAttempts})
            </dd>
            <dt>Next attempt</dt>
            <dd>{formatTime(detail.nextAttemptAt)}</dd>
            <dt>Created</dt>
            <dd>{formatTime(detail.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{formatTime(detail.updatedAt)}</dd>
          </dl>
          <div class="actions">
            {retryable && (
              <button type="button" class="primary" disabled={busy} onClick={() => void act('retry')}>
                Retry this delivery
              </button>
            )}
            <button type="button" class="secondary" disabled={busy} onClick={() => void act('replay')}>
              Replay the event
            </button>
          </div>
          {notice && <DeliveryOutcomeNotice outcome={notice} />}

          <h3>Attempts</h3>
          {detail.attemptLog.length === 0 ? (
            <p class="empty">No attempt yet.</p>
          ) : (
            <ol class="attempts">
              {detail.attemptLog.map((attempt) => (
                <li key={attempt.attempt}>
                  <div class="attempt-head">
                    <span class="attempt-number">#{attempt.attempt}</span>
                    {attempt.statusCode !== null ? (
                      <span class={attempt.statusCode < 300 ? 'code ok' : 'code bad'}>HTTP {attempt.statusCode}</span>
                    ) : (
                      <span class="code bad">no answer</span>
                    )}
                    <span>{attempt.durationMs} ms</span>
                    <time dateTime={attempt.at} class="muted">
                      {formatTime(attempt.at)}
                    </time>
                  </div>
                  {attempt.error && attempt.error !== `HTTP ${attempt.statusCode}` && <p class="attempt-error">{attempt.error}</p>}
                  {attempt.responseBody ? (
                    <>
                      <span class="snippet-label">Response body</span>
                      <pre class="snippet">{snippet(attempt.responseBody, 300)}</pre>
                    </>
                  ) : (
                    <p class="muted small">No response body.</p>
                  )}
                </li>
              ))}
            </ol>
          )}

          <h3>Transitions</h3>
          <ol class="timeline">
            {detail.transitions.map((transition, index) => (
              <li key={index}>
                <time dateTime={transition.at} title={formatTime(transition.at)}>
                  {first ? formatGap(first.at, transition.at) : ''}
                </time>
                <span class="path">
                  {transition.from === null ? <span class="muted">start</span> : <StatusBadge status={transition.from} />}
                  <span aria-hidden="true"> → </span>
                  <span class="visually-hidden"> to </span>
                  <StatusBadge status={transition.to} />
                </span>
                <code class="event">{transition.event}</code>
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
