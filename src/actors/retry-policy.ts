/**
 * The retry decision, kept apart from its effects so the dispatcher (timers) and the JetStream
 * mapping (`nak(delay)` / `term`) reach the same answer for the same failure. Pure: the clock and
 * the randomness are arguments, so a replay with the same inputs decides the same way.
 */

/** Jitter spreads each delay uniformly over ±20% so endpoints that failed together do not retry together. */
export const RETRY_JITTER_RATIO = 0.2;

/** What the policy needs from a failed attempt (an `AttemptOutcome` satisfies it). */
export interface RetryOutcome {
  /**
   * The receiver's `Retry-After` (429/503) in milliseconds; a floor for the next delay.
   * @default null
   */
  readonly retryAfterMs?: number | null;
}

export interface RetryInput {
  /** Attempts completed in the current round, counting the one that just failed (1 after the first failure). */
  readonly roundAttempts: number;
  /**
   * `schedule[i]` is the delay in ms before attempt i+1 of a round; its length is the number of
   * attempts per round (`maxAttempts`). `schedule[0]` is usually 0 (the first attempt goes out at once).
   */
  readonly schedule: readonly number[];
  readonly outcome: RetryOutcome;
  /** Current time, epoch milliseconds. */
  readonly now: number;
  /** Uniform in [0, 1), like `Math.random`. Called once when jitter applies, never otherwise. */
  readonly random: () => number;
  /** Apply ±20% jitter (off when `HOOKLINE_RETRY_JITTER=0`). */
  readonly jitter: boolean;
}

export type RetryDecision =
  | {
      readonly kind: 'retry';
      /** When the next attempt is due, epoch milliseconds. */
      readonly dueAt: number;
      /** `dueAt - now`, handy for `nak(delayMs)`. */
      readonly delayMs: number;
    }
  | { readonly kind: 'dead_letter' };

/**
 * Decides what follows a failed attempt: another attempt at `dueAt`, or dead-lettering when the
 * round's attempts are used up. The delay is `schedule[roundAttempts]`, jittered by ±20% when
 * `jitter` is on (a 0 delay stays 0), then raised to the receiver's `Retry-After` if that is longer.
 * @throws {RangeError} when `roundAttempts` is not a non-negative integer or a schedule entry is
 *   negative or not finite (programming errors, not delivery failures).
 */
export function decideRetry(input: RetryInput): RetryDecision {
  const { roundAttempts, schedule, outcome, now, random, jitter } = input;
  if (!Number.isSafeInteger(roundAttempts) || roundAttempts < 0) {
    throw new RangeError(`roundAttempts must be a non-negative integer, got ${roundAttempts}`);
  }
  const scheduledDelay = schedule[roundAttempts];
  if (scheduledDelay === undefined) {
    return { kind: 'dead_letter' };
  }
  if (!Number.isFinite(scheduledDelay) || scheduledDelay < 0) {
    throw new RangeError(`schedule[${roundAttempts}] must be a non-negative number of ms, got ${scheduledDelay}`);
  }

  const jittered = jitter ? applyJitter(scheduledDelay, random) : scheduledDelay;
  const floor = outcome.retryAfterMs ?? 0;
  const delayMs = Number.isFinite(floor) && floor > jittered ? Math.ceil(floor) : jittered;
  return { kind: 'retry', dueAt: now + delayMs, delayMs };
}

/**
 * Wait before an attempt whose start could not be recorded (cluster: its changelog append failed)
 * is made again: doubled for each such start in a row, reset once one is recorded. Appends that
 * fail fast while the lease is held (a full stream, say) otherwise restart it at once, each pass
 * two transitions and a commit. 100 ms keeps a blip (a JetStream leader change) cheap; 5 s bounds
 * a long failure to a pass per 5 s and resumes within that once appends work. No jitter: the
 * project's restarts land in one changelog batch, which spreading them would split.
 */
const UNRECORDED_START_RETRY_MIN_MS = 100;
const UNRECORDED_START_RETRY_MAX_MS = 5_000;

/** The wait before an attempt is made again after `unrecordedStarts` starts in a row could not be recorded. */
export function unrecordedStartWaitMs(unrecordedStarts: number): number {
  return Math.min(UNRECORDED_START_RETRY_MAX_MS, UNRECORDED_START_RETRY_MIN_MS * 2 ** unrecordedStarts);
}

function applyJitter(delayMs: number, random: () => number): number {
  if (delayMs === 0) {
    return 0;
  }
  // Clamp so a misbehaving random source cannot push the delay outside the documented band.
  const unit = Math.min(Math.max(random(), 0), 1);
  const factor = 1 + RETRY_JITTER_RATIO * (2 * unit - 1);
  // Whole milliseconds, kept inside the band even where rounding would step out of it.
  const lowest = Math.ceil(delayMs * (1 - RETRY_JITTER_RATIO));
  const highest = Math.floor(delayMs * (1 + RETRY_JITTER_RATIO));
  return Math.max(0, Math.min(Math.max(Math.round(delayMs * factor), lowest), highest));
}
