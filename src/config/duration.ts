/**
 * Parsers for the human-friendly values operators put in environment variables
 * (`HOOKLINE_RETRY_SCHEDULE`, `HOOKLINE_DELIVERY_TIMEOUT`, `HOOKLINE_MAX_BODY`).
 * Each one throws a `TypeError` naming the offending text, so a bad setting fails at start-up
 * rather than as a surprising delay hours later.
 */

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

const DURATION_UNITS_MS = { ms: 1, s: SECOND_MS, m: MINUTE_MS, h: HOUR_MS, d: DAY_MS } as const;
type DurationUnit = keyof typeof DURATION_UNITS_MS;

// Binary multiples: the documented default `256kb` must equal the 262,144-byte body limit.
const BYTE_UNITS = { b: 1, kb: 1024, k: 1024, kib: 1024, mb: 1024 ** 2, m: 1024 ** 2, mib: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3, gib: 1024 ** 3 } as const;
type ByteUnit = keyof typeof BYTE_UNITS;

// Integers only: "1.5h" is rare in practice and fractional milliseconds are never meant.
const DURATION_PATTERN = /^(\d+)(ms|s|m|h|d)?$/;
const BYTE_SIZE_PATTERN = /^(\d+)([a-z]+)?$/;

/**
 * Svix's default schedule: the delay before each of the 8 attempts of a round
 * (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
 */
export const SVIX_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  0,
  5 * SECOND_MS,
  5 * MINUTE_MS,
  30 * MINUTE_MS,
  2 * HOUR_MS,
  5 * HOUR_MS,
  10 * HOUR_MS,
  10 * HOUR_MS,
]);

/**
 * Parses a duration such as `0`, `250ms`, `5s`, `5m`, `2h` or `1d` into milliseconds.
 * A bare integer is milliseconds. Surrounding whitespace is ignored; units are case-insensitive.
 * @throws {TypeError} on anything else (negative, fractional, unknown unit, empty).
 */
export function parseDuration(text: string): number {
  const normalized = String(text).trim().toLowerCase();
  const match = DURATION_PATTERN.exec(normalized);
  if (match === null) {
    throw new TypeError(
      `invalid duration ${JSON.stringify(text)}: expected a non-negative integer with an optional unit ms, s, m, h or d (e.g. "250ms", "5s", "2h")`,
    );
  }
  const amount = Number(match[1]);
  const unit = (match[2] ?? 'ms') as DurationUnit;
  return checkedProduct(amount, DURATION_UNITS_MS[unit], text, 'duration');
}

/** What a retry schedule looks like, as its error messages say it (the setting and the webhook field alike). */
export const RETRY_SCHEDULE_FORMAT = 'a comma-separated list of durations (ms, s, m, h, d), such as 0,5s,5m,30m,2h';

/**
 * Parses a comma-separated retry schedule such as `0,5s,5m,30m,2h,5h,10h,10h`: entry i is the
 * delay before attempt i+1 of a round, so the length is the number of attempts per round.
 * @throws {TypeError} when empty or when any entry is not a valid duration.
 */
export function parseRetrySchedule(text: string): number[] {
  const entries = String(text).split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') {
    throw new TypeError('invalid retry schedule "": expected at least one delay, e.g. "0,5s,5m"');
  }
  return entries.map((entry, index) => {
    try {
      return parseDuration(entry);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TypeError(`invalid retry schedule ${JSON.stringify(text)} at entry ${index + 1}: ${reason}`);
    }
  });
}

/**
 * A duration as `parseDuration` reads it back, in the largest unit that holds it whole
 * (`0`, `250ms`, `5s`, `90s`, `2h`): so a schedule shown by the API is the one that was set.
 */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  const units = Object.entries(DURATION_UNITS_MS).reverse();
  const [unit, size] = units.find(([, unitMs]) => ms % unitMs === 0)!;
  return `${ms / size}${unit}`;
}

/** A schedule as `parseRetrySchedule` reads it back (`0,5s,5m`). */
export function formatRetrySchedule(schedule: readonly number[]): string {
  return schedule.map(formatDuration).join(',');
}

/**
 * Parses a byte size such as `262144`, `256kb` or `1mb` (multiples of 1024; `b`, `k`/`kb`/`kib`,
 * `m`/`mb`/`mib`, `g`/`gb`/`gib`, case-insensitive). A bare integer is bytes.
 * @throws {TypeError} on anything else.
 */
export function parseByteSize(text: string): number {
  const normalized = String(text).trim().toLowerCase();
  const match = BYTE_SIZE_PATTERN.exec(normalized);
  const unit = match?.[2] ?? 'b';
  if (match === null || !Object.hasOwn(BYTE_UNITS, unit)) {
    throw new TypeError(
      `invalid byte size ${JSON.stringify(text)}: expected a non-negative integer with an optional unit b, kb, mb or gb (e.g. "256kb", "1mb")`,
    );
  }
  return checkedProduct(Number(match[1]), BYTE_UNITS[unit as ByteUnit], text, 'byte size');
}

function checkedProduct(amount: number, multiplier: number, text: string, what: string): number {
  const value = amount * multiplier;
  if (!Number.isSafeInteger(value)) {
    throw new TypeError(`invalid ${what} ${JSON.stringify(text)}: too large`);
  }
  return value;
}
