import type { Logger } from '../logger.js';
import { retrying } from '../transport/nats-streams.js';
import type { CoordinatorLeases } from './lease-keeper.js';
import { desiredPartitions } from './rendezvous.js';
import { TakeoverPolicy } from './takeover-policy.js';

/**
 * What the coordinator asks of the node when ownership changes. `acquire` restores the partition
 * (changelog into LMDB, live deliveries into actors, its ingest consumer and RPC subscription)
 * and must finish before the node acts for it; `release` stops starting attempts at once, then
 * resolves once in-flight attempts have finished and their changes are written, so the lease is
 * given up only after the partition's last change is in the changelog.
 */
export interface PartitionHost {
  acquire(partition: number): Promise<void>;
  release(partition: number): Promise<void>;
}

export interface CoordinatorOptions {
  /** Kept renewed apart from this loop (`LeaseKeeper`), which tells of the ones it loses. */
  leases: CoordinatorLeases;
  host: PartitionHost;
  partitions: number;
  /** Rebalancing period (the watchdog runs several times a period). */
  tickMs: number;
  /**
   * Longest wait for a handed-back partition to stop (its attempts drain, its consumer closes)
   * before its lease is given up anyway, so a stuck release never keeps a partition from the
   * cluster for good. Nothing is started for it meanwhile: it is fenced already.
   */
  releaseTimeoutMs: number;
  logger: Logger;
}

/**
 * Keeps this node's set of partitions equal to what rendezvous hashing over the live nodes gives it.
 * The leases are renewed elsewhere (`LeaseKeeper`, on its own thread), which reports a lease another
 * node took, or one that ran out before its renewal was answered: either is fenced at once. Two loops:
 * - watchdog (several times a tick, no I/O): a held lease whose local validity ran out (renewals
 *   failed or hung, NATS unreachable) is fenced: the node stops starting attempts for it before
 *   any other node may take it over.
 * - rebalancing (every tick): hand back partitions another node should own, in the background
 *   (their in-flight attempts drain while the lease is still renewed); take free partitions this
 *   node should own, restoring each before acting for it, also in the background; and stand in for
 *   the owner of a partition no node has held for a while (`TakeoverPolicy`).
 * A dead node drops out of the live set when its heartbeat is older than the lease time, so its
 * partitions become desired by others, who take them as soon as its leases expire.
 */

/** Why a lease whose local validity ran out is fenced: the node's turns or NATS's answers were too slow. */
const NOT_RENEWED = 'partition lease not renewed in time (this node or NATS answered too slowly); stopped acting for it and handed it back';

/** Partitions restored at once (a restore holds a JetStream consumer open while it reads the changelog). */
const MAX_ACQUISITIONS_PER_ROUND = 16;

export class ClusterCoordinator {
  /** Partitions restored and acted for. */
  private readonly owned = new Set<number>();
  /** Partitions being taken over or handed back: lease held (and renewed), not acted for. */
  private readonly busy = new Set<number>();
  private readonly handovers = new Set<Promise<void>>();
  /** Takeovers under way: in the background, so that a slow one never holds up a round. */
  private readonly takeovers = new Set<Promise<void>>();
  private readonly policy: TakeoverPolicy;
  private timers: { rebalancing?: NodeJS.Timeout; watchdog?: NodeJS.Timeout } = {};
  private rebalancing: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: CoordinatorOptions) {
    this.policy = new TakeoverPolicy({ tickMs: options.tickMs });
  }

  get nodeId(): string {
    return this.options.leases.nodeId;
  }

  ownedPartitions(): ReadonlySet<number> {
    return this.owned;
  }

  async start(): Promise<void> {
    this.options.leases.onFenced((partition, outcome) => {
      // Its own message: on a single node, "taken by another node" sent operators looking for one.
      this.fence(partition, outcome === 'lost' ? 'partition lease taken by another node; stopped acting for it' : NOT_RENEWED);
    });
    await retrying('joining the cluster membership', () => this.options.leases.join(), this.options.logger);
    await this.rebalance();
    const { tickMs } = this.options;
    const every = (ms: number, run: () => void) => {
      const timer = setInterval(run, ms);
      timer.unref();
      return timer;
    };
    this.timers = {
      rebalancing: every(tickMs, () => {
        this.rebalancing ??= this.rebalance().finally(() => (this.rebalancing = null));
      }),
      watchdog: every(Math.max(25, Math.floor(tickMs / 4)), () => this.watchdog()),
    };
  }

  /** Fences every owned partition whose lease is no longer valid by the local clock. */
  watchdog(): void {
    for (const partition of this.owned) {
      if (!this.options.leases.isValid(partition)) this.fence(partition, NOT_RENEWED);
    }
  }

  private fence(partition: number, message: string): void {
    if (!this.owned.has(partition)) return;
    this.options.logger.warn({ partition }, message);
    this.handBack(partition);
  }

  /** Stops acting for an owned partition at once; the lease goes once its last changes are written. */
  private handBack(partition: number): void {
    this.owned.delete(partition);
    this.busy.add(partition);
    this.policy.released(partition);
    const handover = (async () => {
      const started = Date.now();
      await this.releaseWithin(partition);
      await this.options.leases.release(partition);
      this.busy.delete(partition);
      // How long its calls waited for the next owner, this side of the move.
      this.options.logger.info({ partition, ms: Date.now() - started }, 'partition handed back: its attempts finished, its lease given up');
    })();
    this.handovers.add(handover);
    void handover.finally(() => this.handovers.delete(handover));
  }

  /** The host's release, waited for `releaseTimeoutMs` at most: a stuck release must not keep the lease, nor the partition busy, for good. */
  private async releaseWithin(partition: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, this.options.releaseTimeoutMs, 'late')));
    try {
      if ((await Promise.race([this.options.host.release(partition), late])) === 'late') {
        this.options.logger.warn({ partition }, 'releasing a partition did not finish in time; giving its lease up anyway');
      }
    } catch (error) {
      this.options.logger.error({ err: error, partition }, 'releasing a partition failed');
    } finally {
      clearTimeout(timer);
    }
  }

  /** One round of rebalancing. Errors are logged; the next tick retries. */
  async rebalance(): Promise<void> {
    if (this.stopped) return;
    const { leases, partitions, logger } = this.options;
    let desired: Set<number>;
    let nodeCount: number;
    try {
      // Bounded: the reads are several requests, each with its own timeout, and a round that hung
      // would stop every later one.
      const nodes = await withDeadline(leases.liveNodes(), this.options.tickMs * 8, 'reading the cluster membership');
      if (!nodes.includes(this.nodeId)) nodes.push(this.nodeId);
      desired = desiredPartitions(this.nodeId, nodes, partitions);
      nodeCount = nodes.length;
    } catch (error) {
      logger.warn({ err: error }, 'cluster membership could not be read; retrying next tick');
      return;
    }
    for (const partition of [...this.owned]) {
      const standingIn = this.policy.standsIn(partition);
      if (this.policy.keeps(partition, desired.has(partition))) continue;
      logger.info({ partition, nodes: nodeCount }, standingIn ? 'partition handed back to its owner after standing in for it' : 'partition handed over after a rebalance');
      this.handBack(partition);
    }
    const free = (partition: number) => !this.owned.has(partition) && !this.busy.has(partition) && this.policy.mayTake(partition);
    // A partition whose owner cannot take it (its takeovers fail, or it backs off) is taken by another node meanwhile.
    const unowned = await withDeadline(leases.unownedPartitions(partitions), this.options.tickMs * 8, 'reading the partition leases').catch(() => []);
    const orphans = this.policy.orphans(unowned, desired).filter(free);
    // A few at a time, in the background, so a round stays short and one slow takeover holds up no other.
    const room = Math.max(0, MAX_ACQUISITIONS_PER_ROUND - this.takeovers.size);
    const wanted = [...desired].filter(free).map((partition) => ({ partition, standIn: false }));
    for (const { partition, standIn } of [...wanted, ...orphans.map((partition) => ({ partition, standIn: true }))].slice(0, room)) {
      const takeover = this.takeOver(partition, standIn);
      this.takeovers.add(takeover);
      void takeover.finally(() => this.takeovers.delete(takeover));
    }
  }

  /**
   * Takes a free lease, restores the partition and serves it; or, failing, gives the lease up at
   * once and backs off (`TakeoverPolicy`): a lease held is a partition served, or soon free.
   */
  private async takeOver(partition: number, standIn: boolean): Promise<void> {
    const { leases, host, logger } = this.options;
    this.busy.add(partition);
    try {
      // Fails while the previous owner's lease is still running (it is alive, or not yet expired).
      if (this.stopped || !(await leases.acquire(partition))) return;
      try {
        if (standIn) logger.info({ partition }, 'taking over a partition its owner has left without a lease holder, standing in for it');
        await host.acquire(partition);
        if (this.stopped) throw new Error('the node is stopping');
        if (!leases.isValid(partition)) throw new Error('the lease ran out while the partition was being restored');
        this.owned.add(partition);
        this.policy.acquired(partition, standIn);
        logger.info({ partition }, 'partition acquired');
      } catch (error) {
        const retryInMs = this.policy.failed(partition);
        logger.error({ err: error, partition, retryInMs }, 'could not take over partition; giving it back');
        await this.releaseWithin(partition);
        await leases.release(partition);
      }
    } finally {
      this.busy.delete(partition);
    }
  }

  /**
   * Leaves the membership first, so that the others want this node's partitions at once and take
   * each as soon as its lease is given up; then hands every partition back (leases stay renewed
   * while their attempts drain), then stops renewing.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timers.rebalancing);
    await this.rebalancing;
    await Promise.all([...this.takeovers]);
    const started = Date.now();
    await this.options.leases.withdraw().catch((error: unknown) => this.options.logger.warn({ err: error }, 'could not leave the cluster membership before handing partitions over; the others take them once this node is gone'));
    this.options.logger.info({ partitions: this.owned.size, ms: Date.now() - started }, 'left the cluster membership; handing every partition back');
    for (const partition of [...this.owned]) this.handBack(partition);
    await Promise.all([...this.handovers]);
    clearInterval(this.timers.watchdog);
    await this.options.leases.leave().catch(() => {});
  }
}

function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
