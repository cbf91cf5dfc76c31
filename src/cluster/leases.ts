import type { KV } from '@nats-io/kv';

/**
 * Cluster membership and partition leases in one NATS KV bucket:
 * - `node.<nodeId>` → `{ nodeId, heartbeatAt }`, rewritten every heartbeat; a node whose heartbeat
 *   is older than the lease time is gone.
 * - `lease.<partition>` → `{ nodeId, expiresAt }`, written only with compare-and-set on the KV
 *   revision, so two nodes can never both succeed in taking or renewing the same lease.
 * Times are wall-clock milliseconds; nodes of one cluster must keep their clocks in sync (NTP).
 */

export interface NodeRecord {
  nodeId: string;
  heartbeatAt: number;
}

export interface LeaseRecord {
  nodeId: string;
  expiresAt: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = (value: unknown) => encoder.encode(JSON.stringify(value));
const decode = <T>(bytes: Uint8Array): T => JSON.parse(decoder.decode(bytes)) as T;

export class PartitionLeases {
  /** Revision of each lease this node holds, for compare-and-set renewals. */
  private readonly held = new Map<number, number>();

  constructor(
    private readonly kv: KV,
    readonly nodeId: string,
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async heartbeat(): Promise<void> {
    await this.kv.put(`node.${this.nodeId}`, encode({ nodeId: this.nodeId, heartbeatAt: this.now() } satisfies NodeRecord));
  }

  async leave(): Promise<void> {
    await this.kv.delete(`node.${this.nodeId}`);
  }

  /** Node ids whose heartbeat is within the lease time, sorted. */
  async liveNodes(): Promise<string[]> {
    const nodes: string[] = [];
    const keys = await this.kv.keys('node.*');
    const names: string[] = [];
    for await (const key of keys) names.push(key);
    for (const key of names) {
      const entry = await this.kv.get(key);
      if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) continue;
      const record = decode<NodeRecord>(entry.value);
      if (this.now() - record.heartbeatAt <= this.leaseMs) nodes.push(record.nodeId);
    }
    return nodes.sort();
  }

  /** The node holding a partition's unexpired lease, or null. */
  async holder(partition: number): Promise<string | null> {
    const entry = await this.kv.get(`lease.${partition}`);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
    const lease = decode<LeaseRecord>(entry.value);
    return lease.expiresAt > this.now() ? lease.nodeId : null;
  }

  holds(partition: number): boolean {
    return this.held.has(partition);
  }

  /**
   * Takes the lease when it is free or expired, or renews it when this node holds it.
   * Returns false when another node holds it or won the race.
   */
  async acquireOrRenew(partition: number): Promise<boolean> {
    const key = `lease.${partition}`;
    const value = encode({ nodeId: this.nodeId, expiresAt: this.now() + this.leaseMs } satisfies LeaseRecord);
    try {
      const entry = await this.kv.get(key);
      let revision: number;
      if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) {
        revision = entry ? await this.kv.update(key, value, entry.revision) : await this.kv.create(key, value);
      } else {
        const lease = decode<LeaseRecord>(entry.value);
        if (lease.nodeId !== this.nodeId && lease.expiresAt > this.now()) {
          this.held.delete(partition);
          return false;
        }
        revision = await this.kv.update(key, value, entry.revision);
      }
      this.held.set(partition, revision);
      return true;
    } catch {
      // Lost a compare-and-set race, or NATS is unreachable: either way this node does not hold it.
      this.held.delete(partition);
      return false;
    }
  }

  /** Gives a lease up at once (only if still ours), so the next owner need not wait for expiry. */
  async release(partition: number): Promise<void> {
    const revision = this.held.get(partition);
    this.held.delete(partition);
    if (revision === undefined) return;
    try {
      await this.kv.update(`lease.${partition}`, new Uint8Array(0), revision);
    } catch {
      // Someone else already holds it, or it expired and was taken: nothing of ours to release.
    }
  }
}
