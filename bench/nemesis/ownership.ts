import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { NemesisNode } from './nodes.js';

/**
 * Who owns each partition at the end, two ways: the lease in the KV bucket `<stream>_leases` (its
 * holder and how long it still runs), and the nodes whose `/healthz` lists the partition. A
 * partition nobody serves while a lease on it is renewed, or that nobody serves at all, is what
 * the report's `node-unreadable` ("no reachable owner") comes from.
 */

/** The leases bucket of Hookline's default stream name, which the nodes keep. */
const LEASES_BUCKET = 'HOOKLINE_EVENTS_leases';

export interface PartitionOwnership {
  partition: number;
  /** The lease's holder and how long it still runs (negative: expired), or null when there is none. */
  lease: { nodeId: string; expiresInMs: number } | null;
  /** The nodes whose /healthz lists it. */
  servedBy: string[];
}

export async function readOwnership(connection: NatsConnection, nodes: readonly NemesisNode[], partitions: number): Promise<PartitionOwnership[]> {
  const kv = await new Kvm(connection).open(LEASES_BUCKET);
  const served = new Map<number, string[]>();
  for (const node of nodes) {
    const health = (await (await fetch(`${node.url}/healthz`, { signal: AbortSignal.timeout(5_000) })).json().catch(() => ({}))) as { cluster?: { partitions: number[] } };
    for (const partition of health.cluster?.partitions ?? []) served.set(partition, [...(served.get(partition) ?? []), node.id]);
  }
  const ownership: PartitionOwnership[] = [];
  for (let partition = 0; partition < partitions; partition++) {
    const entry = await kv.get(`lease.${partition}`).catch(() => null);
    let lease: PartitionOwnership['lease'] = null;
    if (entry && entry.operation === 'PUT' && entry.value.length > 0) {
      const record = entry.json<{ nodeId: string; expiresAt: number }>();
      lease = { nodeId: record.nodeId, expiresInMs: record.expiresAt - Date.now() };
    }
    ownership.push({ partition, lease, servedBy: served.get(partition) ?? [] });
  }
  return ownership;
}

/** One line a partition that is not served by exactly its lease's holder. */
export function ownershipTrouble(ownership: readonly PartitionOwnership[]): string[] {
  return ownership
    .filter(({ lease, servedBy }) => servedBy.length !== 1 || lease === null || lease.nodeId !== servedBy[0] || lease.expiresInMs < 0)
    .map(({ partition, lease, servedBy }) => `partition ${partition}: lease ${lease ? `held by ${lease.nodeId}, ${lease.expiresInMs >= 0 ? `running ${lease.expiresInMs} ms more` : `expired ${-lease.expiresInMs} ms ago`}` : 'free'}; served by ${servedBy.length > 0 ? servedBy.join(', ') : 'no node'}`);
}
