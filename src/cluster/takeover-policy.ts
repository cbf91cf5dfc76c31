/**
 * Which partitions a node tries to take, beyond what rendezvous hashing gives it, and when: the
 * rules that keep a partition from being held by a node that cannot serve it (docs/nemesis.md,
 * finding 5). Pure: the clock and the jitter are injected.
 * - A failed takeover backs off: the node leaves the partition's lease free for a while, doubling
 *   with each failure in a row, instead of taking it again at the next tick.
 * - A partition no node holds for `orphanGraceMs` (its owner by rendezvous hashing keeps failing to
 *   take it, or backs off) is taken by another node, as a stand-in.
 * - A stand-in hands it back after a while, so that its owner by rendezvous hashing takes it
 *   again (or, still failing, leaves it free for a stand-in again): two leases the first time,
 *   doubling with each stand-in of the partition that follows soon after the last, up to ten.
 */

export interface TakeoverPolicyOptions {
  /** The rebalancing period: every wait here is a number of ticks. */
  tickMs: number;
  now?: () => number;
  /** Uniform in [0, 1): spreads the retries of nodes that failed together. @default Math.random */
  random?: () => number;
}

/**
 * First wait after a failed takeover, in ticks (jittered by a quarter either way); it doubles with
 * each failure in a row, up to `MAX_BACKOFF_TICKS`. Longer than `ORPHAN_GRACE_TICKS`, so a stand-in
 * has its chance from the first failure on.
 */
const FIRST_BACKOFF_TICKS = 6;
const MAX_BACKOFF_TICKS = 32;
/**
 * How long a partition stays free before a node that is not its owner takes it: a lease (a tick is
 * a quarter lease), past the time its owner takes a free partition (its next tick).
 */
const ORPHAN_GRACE_TICKS = 4;
/**
 * How long a stand-in keeps a partition before giving its owner another chance: FIRST_STAND_IN_TICKS,
 * doubled for each stand-in of the partition here that starts within STAND_IN_MEMORY_TICKS of the
 * last one's start (its owner failed again), up to MAX_STAND_IN_TICKS. Forty ticks each time held
 * partitions away from owners that had recovered: a seed-5 nemesis run reached its layout 50 s
 * after the faults ended (lease 5 s), and nats-cluster-mode in CI waited out its 60 s on it.
 */
const FIRST_STAND_IN_TICKS = 8;
const MAX_STAND_IN_TICKS = 40;
const STAND_IN_MEMORY_TICKS = 160;

export class TakeoverPolicy {
  private readonly failures = new Map<number, { count: number; until: number }>();
  /** Partitions seen without a lease holder, since when. */
  private readonly freeSince = new Map<number, number>();
  /** Partitions held here as a stand-in, since when. */
  private readonly standingIn = new Map<number, number>();
  /** The last stand-in here of each partition: when it started, and for how many ticks. */
  private readonly lastStandIn = new Map<number, { startedAt: number; ticks: number }>();
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly options: TakeoverPolicyOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  /** False while a failed takeover of the partition backs off. */
  mayTake(partition: number): boolean {
    return (this.failures.get(partition)?.until ?? 0) <= this.now();
  }

  /** A takeover failed and its lease was given up; the wait before the next try (ms). */
  failed(partition: number): number {
    const count = (this.failures.get(partition)?.count ?? 0) + 1;
    const ticks = Math.min(FIRST_BACKOFF_TICKS * 2 ** (count - 1), MAX_BACKOFF_TICKS);
    const waitMs = Math.round(ticks * this.options.tickMs * (0.75 + this.random() / 2));
    this.failures.set(partition, { count, until: this.now() + waitMs });
    return waitMs;
  }

  /** A takeover succeeded: as the partition's owner, or (`standIn`) for an owner that could not. */
  acquired(partition: number, standIn: boolean): void {
    this.failures.delete(partition);
    if (!standIn) {
      this.standingIn.delete(partition);
      return;
    }
    const now = this.now();
    const last = this.lastStandIn.get(partition);
    const soonAfter = last !== undefined && now - last.startedAt < STAND_IN_MEMORY_TICKS * this.options.tickMs;
    this.lastStandIn.set(partition, { startedAt: now, ticks: soonAfter ? Math.min(2 * last.ticks, MAX_STAND_IN_TICKS) : FIRST_STAND_IN_TICKS });
    this.standingIn.set(partition, now);
  }

  released(partition: number): void {
    this.standingIn.delete(partition);
  }

  /** Whether the partition is held here as a stand-in for its owner. */
  standsIn(partition: number): boolean {
    return this.standingIn.has(partition);
  }

  /** Whether an owned partition stays here: it is this node's by rendezvous hashing, or its stand-in time is not over. */
  keeps(partition: number, desired: boolean): boolean {
    if (desired) {
      this.standingIn.delete(partition);
      return true;
    }
    const since = this.standingIn.get(partition);
    const ticks = this.lastStandIn.get(partition)?.ticks ?? MAX_STAND_IN_TICKS;
    return since !== undefined && this.now() - since < ticks * this.options.tickMs;
  }

  /**
   * Given the partitions no node holds now, those this node takes as a stand-in: free since the
   * grace, not its own (it takes those anyway), and not backing off here.
   */
  orphans(free: readonly number[], desired: ReadonlySet<number>): number[] {
    const now = this.now();
    const freeNow = new Set(free);
    for (const partition of this.freeSince.keys()) if (!freeNow.has(partition)) this.freeSince.delete(partition);
    for (const partition of free) if (!this.freeSince.has(partition)) this.freeSince.set(partition, now);
    return free.filter((partition) => !desired.has(partition) && now - this.freeSince.get(partition)! >= ORPHAN_GRACE_TICKS * this.options.tickMs && this.mayTake(partition));
  }
}
