/**
 * Hookline writes every time as ISO 8601 with a numeric offset, never `Z` (the envelope and the API
 * both require it). One place for that rule.
 */

/** `2026-11-22T00:00:00.000+00:00` for a time in milliseconds since the epoch. */
export function isoTime(ms: number): string {
  return withNumericOffset(new Date(ms).toISOString());
}

/** An ISO 8601 date-time with `Z` rewritten as `+00:00`; any other offset is kept as given. */
export function withNumericOffset(text: string): string {
  return /z$/i.test(text) ? `${text.slice(0, -1)}+00:00` : text;
}
