import { DEFAULT_MAX_ACK_PENDING, DEFAULT_PULL_BATCH } from '../transport/nats.js';

/**
 * The fewest unacknowledged messages a partition's consumer may hold: one busy partition among many
 * keeps its ingests flowing (at 64, a single busy partition of 64 delivered about 9% fewer events
 * per second in the cluster bench).
 */
const PARTITION_MIN_ACK_PENDING = 256;

/**
 * Flow control of one partition's consumer: the single-node consumer's bound shared out over the
 * partitions, with a floor. At the single-node bound each, a node holding 64 partitions could take
 * 131,072 messages in at once (16,384 now), and they and their ingests' promises outlived the young
 * generation: the GC was cluster mode's largest cost (BENCHMARKS.md).
 */
export function partitionFlowControl(partitions: number): { maxAckPending: number; batch: number } {
  const maxAckPending = Math.max(PARTITION_MIN_ACK_PENDING, Math.ceil(DEFAULT_MAX_ACK_PENDING / partitions));
  return { maxAckPending, batch: Math.min(DEFAULT_PULL_BATCH, maxAckPending) };
}
