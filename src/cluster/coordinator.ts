import type { Logger } from '../actors/project-actor.js';
import { partitionOf } from '../sdk/partition.js';
import type { PartitionLeases } from './leases.js';
import { desiredPartitions } from './rendezvous.js';

/**
 * What the coordinator asks of the node when ownership changes. `acquire` restores the partition
 * (changelog into LMDB, live deliveries into actors, its ingest consumer and RPC subscription)
 * and must finish before the node acts for it; `release` stops all of that (in-flight attempts
 * drain) before the lease is given up, so two nodes never send for one partition at once.
 */
export interface PartitionHost {
  acquire(partition: number): Promise<void>;
  release(partition: number): Promise<void>;
}

export interface CoordinatorOptions {
  leases: PartitionLeases;
  host: PartitionHost;
  partitions: number;
  /** Heartbeat and lease renewal period; the lease lasts `leaseMs` (several periods). */
  tickMs: number;
  logger: Logger;
}

/**
 * Keeps this node's set of partitions equal to what rendezvous hashing over the live nodes gives
 * it. Every tick: heartbeat; renew held leases (a lease that cannot be renewed is dropped at once:
 * fencing); release partitions another node should own; take free partitions this node should own.
 * A dead node drops out of the live set when its heartbeat is older than the lease time, so its
 * partitions become desired by others, who take them as soon as its leases expire.
 */

const MAX_ACQUISITIONS_PER_TICK = 8;
export class ClusterCoordinator {
  private readonly owned = new Set<number>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: CoordinatorOptions) {}

  get nodeId(): string {
    return this.options.leases.nodeId;
  }

  ownedPartitions(): ReadonlySet<number> {
    return this.owned;
  }

  ownsProject(projectId: string): boolean {
    return this.owned.has(partitionOf(projectId, this.options.partitions));
  }

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => {
      this.ticking ??= this.tick().finally(() => {
        this.ticking = null;
      });
    }, this.options.tickMs);
    this.timer.unref();
  }

  /** One round of heartbeat, renewal and rebalancing. Errors are logged; the next tick retries. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    const { leases, host, partitions, logger } = this.options;
    try {
      await leases.heartbeat();
      const nodes = await leases.liveNodes();
      if (!nodes.includes(this.nodeId)) nodes.push(this.nodeId);
      const desired = desiredPartitions(this.nodeId, nodes, partitions);

      for (const partition of [...this.owned]) {
        const keep = desired.has(partition);
        if (keep && (await leases.acquireOrRenew(partition))) continue;
        // Another node should have it now, or the lease could not be renewed: stop acting for it.
        this.owned.delete(partition);
        await host.release(partition);
        await leases.release(partition);
        logger.info({ partition, nodes: nodes.length }, keep ? 'partition lease lost; released' : 'partition handed over after a rebalance');
      }

      // Take what this node should own, a few per round so one tick never outlasts the leases it renews.
      let taken = 0;
      for (const partition of desired) {
        if (this.owned.has(partition) || this.stopped || taken >= MAX_ACQUISITIONS_PER_TICK) continue;
        // Fails while the previous owner's lease is still running (it is alive, or not yet expired).
        if (!(await leases.acquireOrRenew(partition))) continue;
        taken++;
        this.owned.add(partition);
        try {
          await host.acquire(partition);
          logger.info({ partition }, 'partition acquired');
        } catch (error) {
          logger.error({ err: error, partition }, 'could not take over partition; giving it back');
          this.owned.delete(partition);
          await host.release(partition).catch(() => {});
          await leases.release(partition);
        }
      }
    } catch (error) {
      logger.warn({ err: error }, 'cluster coordination round failed; retrying next tick');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const partition of [...this.owned]) {
      this.owned.delete(partition);
      await this.options.host.release(partition).catch(() => {});
      await this.options.leases.release(partition);
    }
    await this.options.leases.leave().catch(() => {});
  }
}
