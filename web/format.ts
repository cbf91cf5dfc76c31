/** Formatting shared by the pages: times in the operator's time zone, short ids, statuses. */
import type { DeliveryStatus } from '../src/sdk/types.js';

const pad = (value: number) => String(value).padStart(2, '0');

/** `2026-11-22 00:58:49` in the operator's time zone: sortable, and the same in every locale. */
export function formatTime(iso: string | null): string {
  if (iso === null) return '—';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `12.345 s`, `87 ms`: the gap between two ISO times. */
export function formatGap(fromIso: string, toIso: string): string {
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  return ms >= 10_000 ? `+${(ms / 1000).toFixed(1)} s` : `+${ms} ms`;
}

export function statusLabel(status: DeliveryStatus | 'failed'): string {
  return status.replace('_', ' ');
}

/** A `datetime-local` value (the operator's local time) as ISO 8601, or undefined when empty. */
export function localInputToIso(value: string): string | undefined {
  if (value.trim() === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}

/** The first `max` characters of a receiver's answer, on one line. */
export function snippet(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
