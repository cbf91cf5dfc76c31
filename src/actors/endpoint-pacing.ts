import type { Clock } from './clock.js';

/**
 * A webhook's delivery limits (`maxConcurrency`, `rateLimitPerSecond`), decided apart from the
 * lifecycle that starts the attempts:
 * - `TokenBucket` decides whether an attempt may start now, or in how long: `capacity` tokens
 *   (a fiftieth of a second's worth, at least one), refilled continuously at the rate. Within any one
 *   second no more start than the bucket held at its start plus that second's refill, so at most
 *   `rate + capacity` (510 at 500/s), however the attempts fall; the burst is that small because a
 *   receiver sees starts a little bunched by the network (a tenth of a second's burst showed 566
 *   arrivals in one second at 500/s in `npm run bench:backlog`);
 * - `EndpointPacer` adds the concurrency cap (the node's `HOOKLINE_ENDPOINT_CONCURRENCY`, lowered by
 *   `maxConcurrency`) and the one timer that wakes the lifecycle when the next token is due.
 * Without limits (both null) it lets through what the node's cap lets through, as before they existed.
 */

/** A token in credit units: integer arithmetic on whole-millisecond clocks, so no rounding lets one more through. */
const TOKEN = 1000;

/** Tokens a bucket at `ratePerSecond` holds when full. */
export function bucketCapacity(ratePerSecond: number): number {
  return Math.max(1, Math.ceil(ratePerSecond / 50));
}

export class TokenBucket {
  readonly capacity: number;
  /** Tokens held, in thousandths: one millisecond at the rate adds `ratePerSecond`. */
  private credit: number;
  private refilledAt: number;

  /** Starts full, or with `tokens` (a bucket whose rate changed keeps what it held, up to its new capacity). */
  constructor(
    readonly ratePerSecond: number,
    private readonly now: () => number,
    tokens?: number,
  ) {
    this.capacity = bucketCapacity(ratePerSecond);
    this.credit = Math.min(this.capacity, tokens ?? this.capacity) * TOKEN;
    this.refilledAt = now();
  }

  /** Tokens held now (fractional). */
  get tokens(): number {
    this.refill();
    return this.credit / TOKEN;
  }

  /** Milliseconds until a token is due; 0 when one is there now. */
  waitMs(): number {
    this.refill();
    return this.credit >= TOKEN ? 0 : Math.ceil((TOKEN - this.credit) / this.ratePerSecond);
  }

  /** Takes a token; false (and nothing taken) when none is there. */
  take(): boolean {
    if (this.waitMs() > 0) return false;
    this.credit -= TOKEN;
    return true;
  }

  private refill(): void {
    const now = this.now();
    // A full bucket is refilled within a second at any rate (capacity <= rate): a longer gap adds nothing,
    // and keeping it short keeps the product exact. A clock that stepped back adds nothing either.
    const elapsedMs = Math.min(1000, Math.max(0, now - this.refilledAt));
    this.credit = Math.min(this.capacity * TOKEN, this.credit + elapsedMs * this.ratePerSecond);
    this.refilledAt = now;
  }
}

/** The limits of an endpoint as its webhook sets them; null: none beyond the node's. */
export interface PacingLimits {
  maxConcurrency: number | null;
  rateLimitPerSecond: number | null;
}

export class EndpointPacer {
  private maxInFlight: number;
  private bucket: TokenBucket | null = null;
  private timer: unknown = null;

  constructor(
    private readonly clock: Clock,
    private readonly endpointConcurrency: number,
    /** Called when a token the pacer waited for is due. */
    private readonly wake: () => void,
  ) {
    this.maxInFlight = endpointConcurrency;
  }

  /** Takes the webhook's limits at once; a bucket whose rate changed keeps its tokens, up to its new capacity. */
  configure(limits: PacingLimits | undefined): void {
    this.maxInFlight = Math.min(this.endpointConcurrency, limits?.maxConcurrency ?? Infinity);
    const rate = limits?.rateLimitPerSecond ?? null;
    if (rate !== this.bucket?.ratePerSecond) this.bucket = rate === null ? null : new TokenBucket(rate, () => this.clock.now(), this.bucket?.tokens);
    // A new rate may make the next token due sooner (or never): the next pump re-arms as needed.
    this.disarm();
  }

  /**
   * Whether one more attempt may start with `inFlight` in flight. False when the cap is reached
   * (the end of an attempt pumps again) or no token is there: then the pacer wakes the lifecycle
   * once the next one is due.
   */
  mayStart(inFlight: number): boolean {
    if (inFlight >= this.maxInFlight) return false;
    const waitMs = this.bucket?.waitMs() ?? 0;
    if (waitMs === 0) return true;
    this.timer ??= this.clock.setTimer(() => {
      this.timer = null;
      this.wake();
    }, waitMs);
    return false;
  }

  /** An attempt started: it spends its token. Call only right after `mayStart` answered true. */
  started(): void {
    this.bucket?.take();
  }

  private disarm(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }
}
