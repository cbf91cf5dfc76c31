import type { ComponentChildren } from 'preact';
import type { Delivery } from '../../src/sdk/types.js';
import { formatTime } from '../format.js';
import type { Page } from '../router.js';
import { href } from '../router.js';
import { StatusBadge } from './status-badge.js';

export interface Selection {
  selected: ReadonlySet<string>;
  toggle(id: string, on: boolean): void;
  toggleAll(ids: string[], on: boolean): void;
}

export interface DeliveryTableProps {
  rows: Delivery[];
  caption: string;
  /** The page whose detail panel a delivery's link opens. */
  page: Page;
  openId: string | null;
  selection?: Selection;
  actions?: (row: Delivery) => ComponentChildren;
}

function lastAnswer(row: Delivery): string {
  const last = row.lastAttempt;
  if (!last) return 'no attempt yet';
  const answer = last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no answer');
  return `${answer} · ${last.durationMs} ms`;
}

/** `service.trigger.event` with a line-break opportunity after each dot, so a narrow column wraps it between words. */
function breakAfterDots(text: string): ComponentChildren {
  return text.split('.').map((part, index, parts) => (index < parts.length - 1 ? [part, '.', <wbr key={index} />] : part));
}

/**
 * The log as a table; below 720 px wide each row becomes a card whose cells carry their column's
 * name (`data-label`), so nothing scrolls sideways on a phone.
 */
export function DeliveryTable({ rows, caption, page, openId, selection, actions }: DeliveryTableProps) {
  if (rows.length === 0) return <p class="empty">No deliveries match.</p>;
  const ids = rows.map((row) => row.id);
  const allSelected = selection !== undefined && ids.every((id) => selection.selected.has(id));
  return (
    <div class="table-scroll" role="region" aria-label={caption} tabIndex={0}>
    <table class="data deliveries">
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {selection && (
            <th scope="col" class="select">
              <input type="checkbox" aria-label="Select every delivery on this page" checked={allSelected} onChange={(event) => selection.toggleAll(ids, event.currentTarget.checked)} />
            </th>
          )}
          <th scope="col">Delivery</th>
          <th scope="col">Status</th>
          <th scope="col">Event</th>
          <th scope="col">Attempts</th>
          <th scope="col">Created</th>
          {actions && (
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.id} class={row.id === openId ? 'open' : undefined} data-delivery-id={row.id} data-status={row.status}>
            {selection && (
              <td class="select" data-label="Select">
                <input type="checkbox" aria-label={`Select ${row.id}`} checked={selection.selected.has(row.id)} onChange={(event) => selection.toggle(row.id, event.currentTarget.checked)} />
              </td>
            )}
            <td data-label="Delivery">
              <a href={href(page, row.id)} aria-current={row.id === openId ? 'true' : undefined}>
                <code>{row.id}</code>
              </a>
            </td>
            <td data-label="Status">
              <StatusBadge status={row.status} />
              <span class="sub">{lastAnswer(row)}</span>
            </td>
            <td data-label="Event">
              <code>{row.eventId}</code>
              <span class="sub">{breakAfterDots(row.eventType)}</span>
            </td>
            <td data-label="Attempts">
              {row.attempts} / {row.maxAttempts}
            </td>
            <td data-label="Created">
              <time dateTime={row.createdAt} title={row.createdAt} class="stacked">
                {formatTime(row.createdAt)}
              </time>
            </td>
            {actions && <td data-label="Actions">{actions(row)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}
