import type { KV } from '@nats-io/kv';

/**
 * Cluster membership and partition leases in one NATS KV bucket:
 * - `node.<nodeId>` → `{ nodeId, heartbeatAt, readsSnapshots }`, rewritten every heartbeat; a node
 *   whose heartbeat is older than the lease time is gone.
 * - `lease.<partition>` → `{ nodeId, expiresAt }`, written only with compare-and-set on the KV
 *   revision, so two nodes can never both succeed in taking or renewing the same lease.
 * Times are wall-clock milliseconds; nodes of one cluster must keep their clocks in sync (NTP).
 *
 * Fencing: a holder counts its lease valid only until `validUntil(partition)`: the time it sent the
 * write that set `expiresAt`, plus the lease time, minus a safety margin. Other nodes take the lease
 * only after `expiresAt` by their own clocks, so a holder that stops acting at `validUntil` (whether
 * or not it can still reach NATS) has stopped before anyone else starts.
 */

export interface NodeRecord {
  nodeId: string;
  heartbeatAt: number;
  /** The node restores from changelog snapshots (absent: a version before them, which would miss what one folds). */
  readsSnapshots?: boolean;
}

export interface LeaseRecord {
  nodeId: string;
  expiresAt: number;
}

/**
 * Outcome of a renewal: `lost` means another node has the lease now (or this node gave it up);
 * `lapsed`, that its local validity ran out before a renewal was answered (it is still held, for
 * `release`); `unknown`, that NATS did not answer.
 */
export type RenewOutcome = 'renewed' | 'lost' | 'lapsed' | 'unknown';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = (value: unknown) => encoder.encode(JSON.stringify(value));
const decode = <T>(bytes: Uint8Array): T => JSON.parse(decoder.decode(bytes)) as T;

export class PartitionLeases {
  /** Revision and local validity of each lease this node holds. */
  private readonly held = new Map<number, { revision: number; validUntil: number }>();
  /** One KV operation per partition at a time, so a renewal never races a release of the same lease. */
  private readonly queues = new Map<number, Promise<unknown>>();
  private readonly marginMs: number;

  constructor(
    private readonly kv: KV,
    /** The bucket's keys matching a filter, deleted ones included (`kvKeyLister`). */
    private readonly listKeys: (filter: string) => Promise<string[]>,
    readonly nodeId: string,
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {
    // Room for clock skew between nodes and for a timer that fires late on a busy machine.
    this.marginMs = Math.min(1_000, Math.floor(leaseMs / 5));
  }

  async heartbeat(): Promise<void> {
    await this.kv.put(`node.${this.nodeId}`, encode({ nodeId: this.nodeId, heartbeatAt: this.now(), readsSnapshots: true } satisfies NodeRecord));
  }

  async leave(): Promise<void> {
    await this.kv.delete(`node.${this.nodeId}`);
  }

  /** Node ids whose heartbeat is within the lease time, sorted. */
  async liveNodes(): Promise<string[]> {
    return [...new Set((await this.liveNodeRecords()).map((record) => record.nodeId))].sort();
  }

  /** Whether every live node restores from changelog snapshots: until then, none may be written. */
  async everyLiveNodeReadsSnapshots(): Promise<boolean> {
    return (await this.liveNodeRecords()).every((record) => record.readsSnapshots === true);
  }

  private async liveNodeRecords(): Promise<NodeRecord[]> {
    const entries = await Promise.all((await this.listKeys('node.*')).map((key) => this.kv.get(key)));
    const records: NodeRecord[] = [];
    for (const entry of entries) {
      if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) continue;
      const record = decode<NodeRecord>(entry.value);
      if (this.now() - record.heartbeatAt <= this.leaseMs) records.push(record);
    }
    return records;
  }

  /** The node holding a partition's unexpired lease, or null. */
  async holder(partition: number): Promise<string | null> {
    const entry = await this.kv.get(`lease.${partition}`);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
    const lease = decode<LeaseRecord>(entry.value);
    return lease.expiresAt > this.now() ? lease.nodeId : null;
  }

  /** The partitions, of the first `partitions`, whose lease no node holds now (free or expired). */
  async unowned(partitions: number): Promise<number[]> {
    const holders = await Promise.all(Array.from({ length: partitions }, (_, partition) => this.holder(partition)));
    return holders.flatMap((holder, partition) => (holder === null ? [partition] : []));
  }

  /** True while this node holds the lease and its local validity has not run out. */
  isValid(partition: number): boolean {
    return this.now() < this.validUntil(partition);
  }

  /** When this node stops counting the lease valid (ms); 0 when it does not hold it. */
  validUntil(partition: number): number {
    return this.held.get(partition)?.validUntil ?? 0;
  }

  /** Partitions whose lease this node holds (valid or not yet given up). */
  heldPartitions(): number[] {
    return [...this.held.keys()];
  }

  private serialized<T>(partition: number, operation: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(partition) ?? Promise.resolve();
    const next = previous.then(operation, operation);
    const tail = next.catch(() => {});
    this.queues.set(partition, tail);
    void tail.then(() => {
      if (this.queues.get(partition) === tail) this.queues.delete(partition);
    });
    return next;
  }

  /**
   * Takes the lease when it is free or expired (or already this node's, as after a restart under the
   * same node id). Returns false when another node holds it or won the race.
   */
  acquire(partition: number): Promise<boolean> {
    return this.serialized(partition, async () => {
      const key = `lease.${partition}`;
      const sentAt = this.now();
      const value = encode({ nodeId: this.nodeId, expiresAt: sentAt + this.leaseMs } satisfies LeaseRecord);
      try {
        const entry = await this.kv.get(key);
        let revision: number;
        if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) {
          revision = entry ? await this.kv.update(key, value, entry.revision) : await this.kv.create(key, value);
        } else {
          const lease = decode<LeaseRecord>(entry.value);
          if (lease.nodeId !== this.nodeId && lease.expiresAt > this.now()) return false;
          revision = await this.kv.update(key, value, entry.revision);
        }
        this.held.set(partition, { revision, validUntil: sentAt + this.leaseMs - this.marginMs });
        return true;
      } catch {
        // Lost a compare-and-set race, or NATS is unreachable: either way this node does not hold it.
        return false;
      }
    });
  }

  /**
   * Extends a lease this node holds, by compare-and-set on the revision it last wrote: if anyone
   * else wrote the key since, the lease is lost. A renewal that gets no answer leaves the lease
   * held but not extended, so it lapses locally at `validUntil` unless a later renewal succeeds
   * before then; once lapsed it is `lapsed`.
   */
  renew(partition: number): Promise<RenewOutcome> {
    return this.serialized(partition, async () => {
      const lease = this.held.get(partition);
      // A lease that ran out locally stays out: the node has stopped acting for the partition and
      // must hand it back and take it again (restoring it), never quietly resume.
      if (!lease) return 'lost';
      if (this.now() >= lease.validUntil) return 'lapsed';
      const sentAt = this.now();
      const value = encode({ nodeId: this.nodeId, expiresAt: sentAt + this.leaseMs } satisfies LeaseRecord);
      try {
        const revision = await this.kv.update(`lease.${partition}`, value, lease.revision);
        if (this.held.get(partition) !== lease) return 'lost';
        // Still ours in KV, but the answer came too late: keep the revision (to release it), not the validity.
        if (this.now() >= lease.validUntil) {
          this.held.set(partition, { revision, validUntil: lease.validUntil });
          return 'lapsed';
        }
        this.held.set(partition, { revision, validUntil: sentAt + this.leaseMs - this.marginMs });
        return 'renewed';
      } catch (error) {
        if (isWrongRevision(error)) {
          this.held.delete(partition);
          return 'lost';
        }
        return 'unknown';
      }
    });
  }

  /** Gives a lease up at once (only if still ours), so the next owner need not wait for expiry. */
  release(partition: number): Promise<void> {
    return this.serialized(partition, async () => {
      const lease = this.held.get(partition);
      this.held.delete(partition);
      if (lease === undefined) return;
      try {
        await this.kv.update(`lease.${partition}`, new Uint8Array(0), lease.revision);
      } catch {
        // Someone else already holds it, or it expired and was taken: nothing of ours to release.
      }
    });
  }
}

/** JetStream's "wrong last sequence" (API error 10071): the key was written by someone else since. */
function isWrongRevision(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10071 || /wrong last sequence/i.test(String(message));
}
