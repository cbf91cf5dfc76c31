import { useEffect, useState } from 'preact/hooks';
import type { EventType, WebhookConfig, WebhookConfigStatus } from '../../src/sdk/types.js';
import { EVENT_TYPES } from '../../src/sdk/types.js';
import type { DashboardApi } from '../api.js';
import { describeError, isHooklineApiError } from '../api.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { Notice } from '../components/notice.js';
import { formatTime } from '../format.js';

type Result = { kind: 'error' | 'success'; text: string } | null;

/** The project's webhook: view and edit it, reveal the signing secret, rotate it (confirmed). */
export function WebhookPage({ api }: { api: DashboardApi }) {
  const [config, setConfig] = useState<WebhookConfig | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [callbackUrl, setCallbackUrl] = useState('');
  const [status, setStatus] = useState<WebhookConfigStatus>('active');
  const [eventTypes, setEventTypes] = useState<EventType[]>([...EVENT_TYPES]);
  const [saving, setSaving] = useState(false);
  const [saveResult, setSaveResult] = useState<Result>(null);

  const fill = (webhook: WebhookConfig) => {
    setConfig(webhook);
    setCallbackUrl(webhook.callbackUrl);
    setStatus(webhook.status === 'paused' ? 'paused' : 'active');
    setEventTypes(webhook.eventTypes);
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
    setSaving(true);
    setSaveResult(null);
    try {
      fill(await api.client.configureWebhook({ callbackUrl: callbackUrl.trim(), status, eventTypes }));
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
            <Notice kind="error">Hookline disabled this endpoint because every attempt failed for too long. Matching deliveries are held; save it as active to resume.</Notice>
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
            <dt>Event types</dt>
            <dd>{config.eventTypes.join(', ')}</dd>
            <dt>Created</dt>
            <dd>{formatTime(config.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{formatTime(config.updatedAt)}</dd>
          </dl>
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
            <fieldset>
              <legend>Status</legend>
              {(['active', 'paused'] as const).map((value) => (
                <label key={value} class="choice">
                  <input type="radio" name="w-status" value={value} checked={status === value} onChange={() => setStatus(value)} />
                  {value === 'active' ? 'Active: deliver events' : 'Paused: hold deliveries until active again'}
                </label>
              ))}
            </fieldset>
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

function SecretPanel({ api }: { api: DashboardApi }) {
  const [secret, setSecret] = useState<string | null>(null);
  const [graceSeconds, setGraceSeconds] = useState('86400');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result>(null);

  const reveal = async () => {
    if (secret !== null) return setSecret(null);
    try {
      setSecret((await api.client.getSecret()).secret);
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
      <p class="muted">Receivers verify every delivery with this secret (Standard Webhooks). During a rotation's grace period both the new and the previous secret sign.</p>
      <div class="actions">
        <button type="button" class="secondary" onClick={() => void reveal()} aria-expanded={secret !== null} aria-controls="secret-value">
          {secret === null ? 'Show secret' : 'Hide secret'}
        </button>
      </div>
      <div id="secret-value">{secret !== null && <code class="secret wrap">{secret}</code>}</div>
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
            How long the previous secret keeps signing; 0 drops it at once.
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
          {Number(graceSeconds) > 0 ? `The current one keeps signing too for ${graceSeconds} seconds.` : 'The current one stops signing at once: receivers that still use it will reject deliveries.'}
        </p>
      </ConfirmDialog>
    </section>
  );
}
