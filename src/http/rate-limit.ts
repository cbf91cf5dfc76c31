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

  /** Takes one token; returns 0 when allowed, else the whole seconds to wait. */
  take(projectId: string): number {
    if (this.ratePerSecond <= 0) return 0;
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(projectId) ?? { tokens: this.ratePerSecond, refilledAt: now };
    bucket.tokens = Math.min(this.ratePerSecond, bucket.tokens + ((now - bucket.refilledAt) / 1000) * this.ratePerSecond);
    bucket.refilledAt = now;
    this.buckets.set(projectId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond));
  }

  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const [projectId, bucket] of this.buckets) if (now - bucket.refilledAt > 60_000) this.buckets.delete(projectId);
  }
}
