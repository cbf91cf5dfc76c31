/**
 * The dashboard's one page that works without JavaScript: the delivery log, read-only, rendered on
 * the server. The key comes in a POSTed form (never the URL) and rides along in a hidden field of
 * the "older" form so paging works; the page is sent `no-store`.
 */
import { DELIVERY_STATUSES } from '../../machines/index.js';
import { EVENT_TYPES } from '../../sdk/types.js';
import type { presentDelivery } from '../present.js';

export type LogRow = ReturnType<typeof presentDelivery>;

/** The form's fields, as posted (every value a string; an absent field is ''). */
export interface LogForm {
  apiKey: string;
  status: string;
  eventType: string;
  eventId: string;
  since: string;
  until: string;
  limit: string;
  cursor: string;
}

export const LOG_FORM_FIELDS = ['apiKey', 'status', 'eventType', 'eventId', 'since', 'until', 'limit', 'cursor'] as const;

export interface LogPageInput {
  form: LogForm;
  /** Shown in an alert above the form (a wrong key, a bad filter). */
  error?: string;
  /** `undefined` before the first search (only the form is shown). */
  rows?: LogRow[];
  nextCursor?: string | null;
}

const escapeHtml = (value: unknown): string =>
  String(value ?? '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const option = (value: string, selected: string, label = value) => `<option value="${escapeHtml(value)}"${value === selected ? ' selected' : ''}>${escapeHtml(label)}</option>`;

function filterFields(form: LogForm): string {
  return `
      <div class="field"><label for="nj-key">API key</label><input id="nj-key" name="apiKey" type="password" autocomplete="off" required value="${escapeHtml(form.apiKey)}"></div>
      <div class="field"><label for="nj-status">Status</label><select id="nj-status" name="status">${option('', form.status, 'any')}${DELIVERY_STATUSES.map((s) => option(s, form.status)).join('')}</select></div>
      <div class="field"><label for="nj-type">Event type</label><select id="nj-type" name="eventType">${option('', form.eventType, 'any')}${EVENT_TYPES.map((t) => option(t, form.eventType)).join('')}</select></div>
      <div class="field"><label for="nj-event">Event id</label><input id="nj-event" name="eventId" value="${escapeHtml(form.eventId)}"></div>
      <div class="field"><label for="nj-since">Since (UTC)</label><input id="nj-since" name="since" type="datetime-local" step="1" value="${escapeHtml(form.since)}"></div>
      <div class="field"><label for="nj-until">Until (UTC)</label><input id="nj-until" name="until" type="datetime-local" step="1" value="${escapeHtml(form.until)}"></div>
      <div class="field"><label for="nj-limit">Per page</label><input id="nj-limit" name="limit" type="number" min="1" max="250" value="${escapeHtml(form.limit || '50')}"></div>`;
}

function table(rows: LogRow[]): string {
  if (rows.length === 0) return '<p class="empty">No deliveries match.</p>';
  const body = rows
    .map((row) => {
      const last = row.lastAttempt ? `${row.lastAttempt.statusCode ?? row.lastAttempt.error ?? '—'} · ${row.lastAttempt.durationMs} ms` : '—';
      return `<tr data-delivery-id="${escapeHtml(row.id)}">
        <td data-label="Delivery"><code>${escapeHtml(row.id)}</code></td>
        <td data-label="Status"><span class="badge status-${escapeHtml(row.status)}">${escapeHtml(row.status.replace('_', ' '))}</span></td>
        <td data-label="Event type">${escapeHtml(row.eventType)}</td>
        <td data-label="Event"><code>${escapeHtml(row.eventId)}</code></td>
        <td data-label="Attempts">${row.attempts} / ${row.maxAttempts}</td>
        <td data-label="Last answer">${escapeHtml(last)}</td>
        <td data-label="Created"><time datetime="${escapeHtml(row.createdAt)}">${escapeHtml(row.createdAt.replace('T', ' ').replace(/\.\d+\+00:00$/, ' UTC'))}</time></td>
      </tr>`;
    })
    .join('');
  return `<table class="data">
      <caption class="visually-hidden">Deliveries, newest first</caption>
      <thead><tr><th scope="col">Delivery</th><th scope="col">Status</th><th scope="col">Event type</th><th scope="col">Event</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th></tr></thead>
      <tbody>${body}</tbody>
    </table>`;
}

/** The next page's form: the same filters and the key as hidden fields, plus the cursor. */
function olderForm(form: LogForm, nextCursor: string): string {
  const hidden = LOG_FORM_FIELDS.filter((name) => name !== 'cursor')
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(form[name])}">`)
    .join('');
  return `<form method="post" action="/ui/log" class="pager">${hidden}<input type="hidden" name="cursor" value="${escapeHtml(nextCursor)}"><button type="submit" class="secondary">Older deliveries</button></form>`;
}

export function renderLogPage(input: LogPageInput): string {
  const { form, error, rows, nextCursor } = input;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Delivery log · Hookline</title>
  <link rel="stylesheet" href="/ui/app.css">
</head>
<body>
  <a class="skip-link" href="#main">Skip to content</a>
  <header class="site-header"><span class="brand">Hookline</span><span class="muted">delivery log (no JavaScript)</span></header>
  <main id="main" class="page">
    <h1>Delivery log</h1>
    <p class="muted">This page works without JavaScript and only reads the log. The webhook settings, dead letters, replay and the live state diagram need JavaScript: <a href="/ui/">open the full dashboard</a>.</p>
    ${error ? `<div class="alert error" role="alert">${escapeHtml(error)}</div>` : ''}
    <form method="post" action="/ui/log" class="filters">
      <fieldset><legend>Filters</legend><div class="form-grid">${filterFields(form)}</div></fieldset>
      <button type="submit" class="primary">Show deliveries</button>
    </form>
    ${rows ? `<section aria-label="Deliveries" class="log">${table(rows)}${nextCursor ? olderForm(form, nextCursor) : ''}</section>` : ''}
  </main>
</body>
</html>
`;
}
