import { DEFAULT_MAX_ACK_PENDING, DEFAULT_PULL_BATCH } from '../transport/nats.js';

/** Unacknowledged messages a node may hold across all its partitions' consumers, when it holds every partition. */
const NODE_MAX_ACK_PENDING = DEFAULT_MAX_ACK_PENDING;
/** The fewest a partition's consumer may hold, so that one busy partition still fills its commits. */
const PARTITION_MIN_ACK_PENDING = 64;

/**
 * Flow control of one partition's consumer: the single-node consumer's bound shared out over the
 * partitions, so that a node holding all of them holds about as many messages as a single node
 * does. At the single-node bound each, a node holding 64 partitions could take 131,072 messages in
 * at once, and they and their ingests' promises outlived the young generation (BENCHMARKS.md).
 */
export function partitionFlowControl(partitions: number): { maxAckPending: number; batch: number } {
  const maxAckPending = Math.max(PARTITION_MIN_ACK_PENDING, Math.ceil(NODE_MAX_ACK_PENDING / partitions));
  return { maxAckPending, batch: Math.min(DEFAULT_PULL_BATCH, maxAckPending) };
}
