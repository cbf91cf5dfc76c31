import { fnv1a } from '../sdk/partition.js';

/**
 * Rendezvous (highest random weight) hashing: each partition goes to the live node with the highest
 * hash of (node, partition). When a node joins it takes only the partitions it now wins; when one
 * leaves only its partitions move. So rebalancing moves as few partitions as possible, and every
 * node computes the same answer from the same membership without talking to the others.
 */
/** Murmur3's finaliser: spreads FNV's output so similar node names get unrelated weights. */
function mix(hash: number): number {
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

export function rendezvousOwner(partition: number, nodeIds: readonly string[]): string | null {
  let best: string | null = null;
  let bestWeight = -1;
  for (const nodeId of nodeIds) {
    const weight = mix(fnv1a(`${nodeId}#${partition}`));
    if (weight > bestWeight || (weight === bestWeight && best !== null && nodeId < best)) {
      best = nodeId;
      bestWeight = weight;
    }
  }
  return best;
}

/** The partitions (of `count`) that `nodeId` should own given the live nodes. */
export function desiredPartitions(nodeId: string, nodeIds: readonly string[], count: number): Set<number> {
  const mine = new Set<number>();
  for (let partition = 0; partition < count; partition++) if (rendezvousOwner(partition, nodeIds) === nodeId) mine.add(partition);
  return mine;
}
