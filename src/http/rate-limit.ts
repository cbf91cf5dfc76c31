import { HooklineError } from '../errors.js';

/**
 * Per-project token buckets: `ratePerSecond` tokens refill each second, up to one second's worth,
 * so a project may burst briefly but not sustain more than its rate. Buckets of idle projects are
 * dropped on the next sweep, keeping memory bounded by the projects active in the last minute.
 */
export class ProjectRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; refilledAt: number }>();
  private sweptAt = 0;

  constructor(
    private readonly ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes `count` tokens (one per request, one per event of a batch); returns 0 when allowed, else
   * the whole seconds to wait. A batch larger than one second's worth is let through once the bucket
   * is full and leaves it in debt, repaid by the refill before anything else passes: the project
   * still sustains no more than its rate, and such a batch is not refused forever.
   */
  take(projectId: string, count = 1): number {
    if (this.ratePerSecond <= 0) return 0;
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(projectId) ?? { tokens: this.ratePerSecond, refilledAt: now };
    bucket.tokens = Math.min(this.ratePerSecond, bucket.tokens + ((now - bucket.refilledAt) / 1000) * this.ratePerSecond);
    bucket.refilledAt = now;
    this.buckets.set(projectId, bucket);
    const needed = Math.min(count, this.ratePerSecond);
    if (bucket.tokens >= needed) {
      bucket.tokens -= count;
      return 0;
    }
    return Math.max(1, Math.ceil((needed - bucket.tokens) / this.ratePerSecond));
  }

  /** The refusal of a project over its rate, counted in `unit` (requests, or a batch's events). */
  refusal(waitSeconds: number, unit: 'requests' | 'events'): HooklineError {
    return new HooklineError('HOOKLINE_ERR_RATE_LIMITED', `more than ${this.ratePerSecond} ${unit} per second for this project; retry after ${waitSeconds} s`, { retryAfterSeconds: waitSeconds });
  }

  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const [projectId, bucket] of this.buckets) if (now - bucket.refilledAt > 60_000) this.buckets.delete(projectId);
  }
}
