import { useEffect, useState } from 'preact/hooks';
import type { DeliveryOrdering, EventType, WebhookConfig, WebhookConfigStatus } from '../../src/sdk/types.js';
import { EVENT_TYPES } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError, isHooklineApiError } from '../api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DeliveryOutcomeNotice, Notice } from '../components/notice.js';
import type { DeliveryOutcome } from '../components/notice.js';
import { formatTime } from '../format.js';

type Result = { kind: 'error' | 'success'; text: string } | null;

/** The project's webhook: view and edit it, reveal the signing secret, rotate it (confirmed). */
export function WebhookPage({ api }: { api: DashboardApi }) {
  const [config, setConfig] = useState<WebhookConfig | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [callbackUrl, setCallbackUrl] = useState('');
  const [status, setStatus] = useState<WebhookConfigStatus>('active');
  const [eventTypes, setEventTypes] = useState<EventType[]>([...EVENT_TYPES]);
  const [headersText, setHeadersText] = useState('');
  const [filterText, setFilterText] = useState('');
  const [operationalUrl, setOperationalUrl] = useState('');
  const [ordering, setOrdering] = useState<DeliveryOrdering>('unordered');
  const [maxConcurrencyText, setMaxConcurrencyText] = useState('');
  const [rateLimitText, setRateLimitText] = useState('');
  const [retryScheduleText, setRetryScheduleText] = useState('');
  const [sendTraceparent, setSendTraceparent] = useState(false);
  const [saving, setSaving] = useState(false);
  const [saveResult, setSaveResult] = useState<Result>(null);

  const fill = (webhook: WebhookConfig) => {
    setConfig(webhook);
    setCallbackUrl(webhook.callbackUrl);
    setStatus(webhook.status === 'paused' ? 'paused' : 'active');
    setEventTypes(webhook.eventTypes);
    setHeadersText(formatHeaders(webhook.headers));
    setFilterText(webhook.filter === null ? '' : JSON.stringify(webhook.filter, null, 2));
    setOperationalUrl(webhook.operationalUrl ?? '');
    setOrdering(webhook.ordering);
    setMaxConcurrencyText(webhook.maxConcurrency === null ? '' : String(webhook.maxConcurrency));
    setRateLimitText(webhook.rateLimitPerSecond === null ? '' : String(webhook.rateLimitPerSecond));
    setRetryScheduleText(webhook.retrySchedule ?? '');
    setSendTraceparent(webhook.sendTraceparent);
  };

  useEffect(() => {
    const controller = new AbortController();
    api.client
      .getWebhook({ signal: controller.signal })
      .then(fill)
      .catch((caught: unknown) => {
        if (controller.signal.aborted) return;
        if (isHooklineApiError(caught) && caught.code === 'webhook_not_configured') setConfig(null);
        else setLoadError(describeError(caught));
      });
    return () => controller.abort();
  }, [api]);

  const save = async () => {
    const headers = parseHeaders(headersText);
    if (typeof headers === 'string') return setSaveResult({ kind: 'error', text: headers });
    const filter = parseFilter(filterText);
    if (typeof filter === 'string') return setSaveResult({ kind: 'error', text: filter });
    const maxConcurrency = parseLimit(maxConcurrencyText, 'Max concurrency');
    if (typeof maxConcurrency === 'string') return setSaveResult({ kind: 'error', text: maxConcurrency });
    const rateLimitPerSecond = parseLimit(rateLimitText, 'Rate limit');
    if (typeof rateLimitPerSecond === 'string') return setSaveResult({ kind: 'error', text: rateLimitPerSecond });
    setSaving(true);
    setSaveResult(null);
    try {
      fill(await api.client.configureWebhook({ callbackUrl: callbackUrl.trim(), status, eventTypes, headers, filter, ordering, operationalUrl: operationalUrl.trim() || null, maxConcurrency, rateLimitPerSecond, retrySchedule: retryScheduleText.trim() || null, sendTraceparent }));
      setSaveResult({ kind: 'success', text: 'Saved. New events are delivered with this configuration.' });
    } catch (caught) {
      setSaveResult({ kind: 'error', text: describeError(caught) });
    } finally {
      setSaving(false);
    }
  };

  const toggleType = (type: EventType, on: boolean) => setEventTypes(on ? EVENT_TYPES.filter((t) => t === type || eventTypes.includes(t)) : eventTypes.filter((t) => t !== type));

  return (
    <div class="single">
      <h1 tabIndex={-1}>Webhook</h1>
      {loadError && <Notice kind="error">{loadError}</Notice>}
      {config === undefined && !loadError && <p role="status">Loading…</p>}
      {config === null && <Notice kind="info">No webhook is configured yet: events are stored but not delivered. Set the endpoint below.</Notice>}
      {config && (
        <section class="panel" aria-labelledby="current-title">
          <h2 id="current-title">Current configuration</h2>
          {config.status === 'disabled' && (
            <Notice kind="error">Hookline disabled this endpoint: {config.disabledReason ?? 'every attempt failed for too long'}. Matching deliveries are held; save it as active to resume.</Notice>
          )}
          <dl class="facts">
            <dt>Endpoint</dt>
            <dd>
              <code class="wrap">{config.callbackUrl}</code>
            </dd>
            <dt>Status</dt>
            <dd>
              <span class={`badge webhook-${config.status}`}>{config.status}</span>
            </dd>
            <dt>Circuit breaker</dt>
            <dd>
              <span class={`badge circuit-${config.circuit.state}`}>{config.circuit.state.replace('_', '-')}</span>
              {config.circuit.state !== 'closed' && (
                <span class="circuit-detail">
                  {' '}since {formatTime(config.circuit.openedAt)}, after {config.circuit.consecutiveFailures} failures in a row; due attempts fail without being sent;{' '}
                  {config.circuit.state === 'half_open' ? 'a probe is in flight' : `next probe at ${formatTime(config.circuit.nextProbeAt)}`}
                </span>
              )}
            </dd>
            <dt>Event types</dt>
            <dd>{config.eventTypes.join(', ')}</dd>
            <dt>Custom headers</dt>
            <dd>{Object.keys(config.headers).length === 0 ? 'none' : <code class="wrap">{Object.keys(config.headers).join(', ')}</code>}</dd>
            <dt>Payload filter</dt>
            <dd>{config.filter === null ? 'none: every event of these types' : <code class="wrap">{JSON.stringify(config.filter)}</code>}</dd>
            <dt>Ordering</dt>
            <dd>{config.ordering === 'fifo' ? 'fifo: one at a time, in ingest order' : 'unordered'}</dd>
            <dt>Max concurrency</dt>
            <dd>{config.maxConcurrency === null ? 'the node\'s limit' : `${config.maxConcurrency} in flight`}</dd>
            <dt>Rate limit</dt>
            <dd>{config.rateLimitPerSecond === null ? 'none' : `${config.rateLimitPerSecond} per second`}</dd>
            <dt>Retry schedule</dt>
            <dd>{config.retrySchedule === null ? 'the node\'s schedule' : <code class="wrap">{config.retrySchedule}</code>}</dd>
            <dt>Trace context</dt>
            <dd>{config.sendTraceparent ? <>each attempt carries its <code>traceparent</code></> : 'not sent'}</dd>
            <dt>Operational events</dt>
            <dd>{config.operationalUrl === null ? 'not sent' : <code class="wrap">{config.operationalUrl}</code>}</dd>
            <dt>Created</dt>
            <dd>{formatTime(config.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{formatTime(config.updatedAt)}</dd>
          </dl>
          <TestEvent api={api} />
        </section>
      )}
      {config !== undefined && (
        <section class="panel" aria-labelledby="edit-title">
          <h2 id="edit-title">{config ? 'Edit' : 'Configure'}</h2>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              void save();
            }}
          >
            <div class="field wide">
              <label for="w-url">Endpoint URL</label>
              <input id="w-url" type="url" required value={callbackUrl} onInput={(event) => setCallbackUrl(event.currentTarget.value)} placeholder="https://example.com/webhooks" spellcheck={false} aria-describedby="w-url-hint" />
              <span id="w-url-hint" class="hint">
                Deliveries are POSTed here, signed with the secret below.
              </span>
            </div>
            <RadioChoices legend="Status" name="w-status" value={status} onChange={setStatus} choices={STATUS_CHOICES} />
            <fieldset>
              <legend>Event types</legend>
              {EVENT_TYPES.map((type) => (
                <label key={type} class="choice">
                  <input type="checkbox" checked={eventTypes.includes(type)} onChange={(event) => toggleType(type, event.currentTarget.checked)} />
                  <code>{type}</code>
                </label>
              ))}
              {eventTypes.length === 0 && <span class="hint error-text">Choose at least one event type.</span>}
            </fieldset>
            <RadioChoices legend="Ordering" name="w-ordering" value={ordering} onChange={setOrdering} choices={ORDERING_CHOICES} />
            <div class="field wide">
              <label for="w-max-concurrency">Max concurrency</label>
              <input id="w-max-concurrency" class="short" type="number" inputMode="numeric" min={1} step={1} value={maxConcurrencyText} onInput={(event) => setMaxConcurrencyText(event.currentTarget.value)} aria-describedby="w-max-concurrency-hint" />
              <span id="w-max-concurrency-hint" class="hint">
                Attempts in flight at most, up to the node's <code>HOOKLINE_ENDPOINT_CONCURRENCY</code> (default 50). Empty: that limit.
              </span>
            </div>
            <div class="field wide">
              <label for="w-rate-limit">Rate limit (per second)</label>
              <input id="w-rate-limit" class="short" type="number" inputMode="numeric" min={1} max={100000} step={1} value={rateLimitText} onInput={(event) => setRateLimitText(event.currentTarget.value)} aria-describedby="w-rate-limit-hint" />
              <span id="w-rate-limit-hint" class="hint">
                Attempts started per second at most (1 to 100,000); a backlog goes out at this pace. Empty: no limit.
              </span>
            </div>
            <div class="field wide">
              <label for="w-retry-schedule">Retry schedule</label>
              <input id="w-retry-schedule" type="text" value={retryScheduleText} onInput={(event) => setRetryScheduleText(event.currentTarget.value)} placeholder="0,5s,5m,30m,2h" spellcheck={false} aria-describedby="w-retry-schedule-hint" />
              <span id="w-retry-schedule-hint" class="hint">
                The delay before each attempt of a round (<code>ms</code>, <code>s</code>, <code>m</code>, <code>h</code>, <code>d</code>), as in <code>HOOKLINE_RETRY_SCHEDULE</code>; a delivery dead-letters after the last. For new deliveries and rounds. Empty: the node's schedule.
              </span>
            </div>
            <div class="field wide">
              <label for="w-headers">Custom headers</label>
              <textarea id="w-headers" rows={3} value={headersText} onInput={(event) => setHeadersText(event.currentTarget.value)} placeholder="X-Tenant: acme" spellcheck={false} aria-describedby="w-headers-hint" />
              <span id="w-headers-hint" class="hint">
                One <code>Name: value</code> a line, sent with every delivery (at most 20; not covered by the signature).
              </span>
            </div>
            <div class="field wide">
              <label class="choice">
                <input id="w-send-traceparent" type="checkbox" checked={sendTraceparent} onChange={(event) => setSendTraceparent(event.currentTarget.checked)} aria-describedby="w-send-traceparent-hint" />
                Send <code>traceparent</code>
              </label>
              <span id="w-send-traceparent-hint" class="hint">
                Each attempt carries the W3C <code>traceparent</code> of its span, so the receiver continues the trace (not covered by the signature). Only while the node exports traces (<code>OTEL_EXPORTER_OTLP_ENDPOINT</code>).
              </span>
            </div>
            <div class="field wide">
              <label for="w-filter">Payload filter</label>
              <textarea id="w-filter" rows={4} value={filterText} onInput={(event) => setFilterText(event.currentTarget.value)} placeholder='{"data.amount": {"$gte": 100}}' spellcheck={false} aria-describedby="w-filter-hint" />
              <span id="w-filter-hint" class="hint">
                A JSON rule over <code>type</code>, <code>metadata.*</code> and <code>data.*</code>; events that do not match get no delivery. Empty: deliver every event of the types above.
              </span>
            </div>
            <div class="field wide">
              <label for="w-ops-url">Operational events URL</label>
              <input id="w-ops-url" type="url" value={operationalUrl} onInput={(event) => setOperationalUrl(event.currentTarget.value)} placeholder="https://example.com/hookline-events" spellcheck={false} aria-describedby="w-ops-url-hint" />
              <span id="w-ops-url-hint" class="hint">
                Optional. Receives <code>hookline.endpoint.disabled</code>, <code>hookline.endpoint.recovered</code> and <code>hookline.delivery.dead_lettered</code>, signed with the operational secret.
              </span>
            </div>
            <button type="submit" class="primary" disabled={saving || eventTypes.length === 0}>
              {saving ? 'Saving…' : 'Save webhook'}
            </button>
          </form>
          {saveResult && <Notice kind={saveResult.kind}>{saveResult.text}</Notice>}
        </section>
      )}
      {config && <SecretPanel api={api} />}
    </div>
  );
}

const STATUS_CHOICES: ReadonlyArray<[WebhookConfigStatus, string]> = [
  ['active', 'Active: deliver events'],
  ['paused', 'Paused: hold deliveries until active again'],
];

const ORDERING_CHOICES: ReadonlyArray<[DeliveryOrdering, string]> = [
  ['unordered', 'Unordered: deliver concurrently (fastest)'],
  ['fifo', 'FIFO: one at a time in ingest order; a failing delivery holds back the rest'],
];

function RadioChoices<T extends string>({ legend, name, value, onChange, choices }: { legend: string; name: string; value: T; onChange: (value: T) => void; choices: ReadonlyArray<[T, string]> }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {choices.map(([choice, label]) => (
        <label key={choice} class="choice">
          <input type="radio" name={name} value={choice} checked={value === choice} onChange={() => onChange(choice)} />
          {label}
        </label>
      ))}
    </fieldset>
  );
}

function formatHeaders(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

/** `Name: value` lines as an object, or what is wrong with a line (the server checks names and values). */
function parseHeaders(text: string): Record<string, string> | string {
  const headers: Record<string, string> = {};
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return `Custom headers, line ${index + 1}: write it as Name: value`;
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** A limit field as a number, null when empty, or what is wrong with it (the server checks the range). */
function parseLimit(text: string, label: string): number | null | string {
  if (text.trim() === '') return null;
  return /^\d+$/.test(text.trim()) ? Number(text.trim()) : `${label}: a whole number, or empty for no limit`;
}

/** The filter field as a rule, null when empty, or why it is not JSON (the server checks the rule). */
function parseFilter(text: string): Record<string, unknown> | null | string {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'Payload filter: not valid JSON';
  }
}

/** The payload of a test event: marked as a test, so a receiver can tell it from real traffic. */
const TEST_EVENT_DATA = { test: true, message: 'A test event sent from the Hookline dashboard.' };

/** Sends a `service.trigger.event` test event through the API and links the delivery it made. */
function TestEvent({ api }: { api: DashboardApi }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<DeliveryOutcome | null>(null);

  const send = async () => {
    setBusy(true);
    setResult(null);
    try {
      const sent = await api.client.sendEvent({ type: 'service.trigger.event', data: TEST_EVENT_DATA });
      setResult(
        sent.deliveryId
          ? { kind: 'success', text: `Sent test event ${sent.id}. Its delivery: `, deliveryId: sent.deliveryId }
          : { kind: 'info', text: `Stored test event ${sent.id}, but no delivery was made: this webhook does not take service.trigger.event.` },
      );
    } catch (caught) {
      setResult({ kind: 'error', text: describeError(caught) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="test-event">
      <div class="actions">
        <button type="button" class="secondary" disabled={busy} onClick={() => void send()} aria-describedby="test-event-hint">
          {busy ? 'Sending…' : 'Send test event'}
        </button>
        <span id="test-event-hint" class="hint">
          A <code>service.trigger.event</code> with <code>"test": true</code> in its data, delivered like any other.
        </span>
      </div>
      {result && <DeliveryOutcomeNotice outcome={result} />}
    </div>
  );
}

function SecretPanel({ api }: { api: DashboardApi }) {
  const [secret, setSecret] = useState<string | null>(null);
  const [operationalSecret, setOperationalSecret] = useState<string | null>(null);
  const [graceSeconds, setGraceSeconds] = useState('86400');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result>(null);

  const reveal = async () => {
    if (secret !== null) return setSecret(null);
    try {
      const secrets = await api.client.getSecret();
      setSecret(secrets.secret);
      setOperationalSecret(secrets.operationalSecret ?? null);
    } catch (caught) {
      setResult({ kind: 'error', text: describeError(caught) });
    }
  };

  const rotate = async () => {
    setBusy(true);
    try {
      const answer = await api.client.rotateSecret({ graceSeconds: Number(graceSeconds) });
      setSecret(answer.secret);
      setResult({ kind: 'success', text: `Rotated. The previous secret keeps signing until ${formatTime(answer.previousSecretExpiresAt)}.` });
    } catch (caught) {
      setResult({ kind: 'error', text: describeError(caught) });
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  return (
    <section class="panel" aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      <p class="muted">Receivers verify every delivery with this secret (Standard Webhooks). During a rotation's grace period the earlier secrets sign too.</p>
      <div class="actions">
        <button type="button" class="secondary" onClick={() => void reveal()} aria-expanded={secret !== null} aria-controls="secret-value">
          {secret === null ? 'Show secret' : 'Hide secret'}
        </button>
      </div>
      <div id="secret-value">
        {secret !== null && <code class="secret wrap">{secret}</code>}
        {secret !== null && operationalSecret !== null && (
          <p>
            Operational events are signed with <code class="secret wrap">{operationalSecret}</code>
          </p>
        )}
      </div>
      <form
        class="rotate"
        onSubmit={(event) => {
          event.preventDefault();
          setResult(null);
          setConfirming(true);
        }}
      >
        <div class="field narrow">
          <label for="s-grace">Grace period (seconds)</label>
          <input id="s-grace" type="number" min={0} max={2592000} required value={graceSeconds} onInput={(event) => setGraceSeconds(event.currentTarget.value)} aria-describedby="s-grace-hint" />
          <span id="s-grace-hint" class="hint">
            How long the earlier secrets keep signing, at most; 0 drops them all at once.
          </span>
        </div>
        <button type="submit" class="danger" disabled={busy}>
          Rotate secret…
        </button>
      </form>
      {result && <Notice kind={result.kind}>{result.text}</Notice>}
      <ConfirmDialog open={confirming} title="Rotate the signing secret?" confirmLabel="Rotate secret" tone="danger" busy={busy} onConfirm={() => void rotate()} onCancel={() => setConfirming(false)}>
        <p>
          A new secret signs every delivery from now on.{' '}
          {Number(graceSeconds) > 0 ? `The current one keeps signing too for ${graceSeconds} seconds, and no earlier one longer.` : 'The current one, and any earlier one still in its grace, stop signing at once: receivers that still use them will reject deliveries.'}
        </p>
      </ConfirmDialog>
    </section>
  );
}
