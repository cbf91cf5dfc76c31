import { rendezvousOwner } from '../../src/cluster/rendezvous.js';

/**
 * Whether the partitions lie where the cluster is heading, not merely somewhere: each held by
 * exactly the node rendezvous hashing gives it among `nodeIds` (all running), and by no other.
 * "Held by exactly one node" alone held as soon as a node restarted after a long absence, before it
 * took its partitions back: the checks then read a cluster still handing them over (finding 7).
 */
export function atRendezvousLayout(held: ReadonlyMap<string, readonly number[]>, nodeIds: readonly string[], partitions: number): boolean {
  const holders = new Map<number, string[]>();
  for (const [nodeId, owned] of held) for (const partition of owned) holders.set(partition, [...(holders.get(partition) ?? []), nodeId]);
  for (let partition = 0; partition < partitions; partition++) {
    const nodes = holders.get(partition) ?? [];
    if (nodes.length !== 1 || nodes[0] !== rendezvousOwner(partition, nodeIds)) return false;
  }
  return true;
}
