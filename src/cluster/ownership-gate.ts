import type { Logger } from '../logger.js';

/**
 * A cluster node answers `/readyz` ready only once every partition has an owner (its lease held by
 * a node): before, three nodes started together were ready within 1-2 s while about half the
 * partitions had none, and calls for those answered 503 `partition_moving`. Checked once, at the
 * start: a failover later (a partition without owner for a lease time) must not take every node out
 * of a load balancer at once; the calls of such a partition wait for its next owner instead
 * (`PartitionRpc.forward`).
 */

export interface OwnershipGateOptions {
  /** The partitions whose lease no node holds now. */
  unowned: () => Promise<number[]>;
  partitions: number;
  /** How often to look again. */
  intervalMs: number;
  /** True once the node stops: the wait ends, unresolved ownership or not. */
  stopped: () => boolean;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** How often a wait that goes on is logged. @default 10000 */
  reportEveryMs?: number;
}

/** Resolves true once no partition is without owner, false if the node stopped first. */
export async function untilEveryPartitionOwned(options: OwnershipGateOptions): Promise<boolean> {
  const { unowned, partitions, intervalMs, stopped, logger, reportEveryMs = 10_000 } = options;
  const started = Date.now();
  let reportedAt = started;
  for (;;) {
    if (stopped()) return false;
    const without = await unowned().catch(() => null);
    if (without !== null && without.length === 0) {
      logger.info({ partitions, ms: Date.now() - started }, 'cluster: every partition has an owner; /readyz answers ready');
      return true;
    }
    if (Date.now() - reportedAt >= reportEveryMs) {
      reportedAt = Date.now();
      logger.warn({ withoutOwner: without ?? 'unknown (the leases could not be read)', waitedMs: reportedAt - started }, 'cluster: not ready yet, partitions without an owner');
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
