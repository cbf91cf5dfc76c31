import { DEFAULT_MAX_ACK_PENDING, DEFAULT_PULL_BATCH, MAX_MESSAGES_PER_TURN } from '../transport/nats.js';

/**
 * The fewest unacknowledged messages a partition's consumer may hold: one busy partition among many
 * keeps its ingests flowing (at 64, a single busy partition of 64 delivered about 9% fewer events
 * per second in the cluster bench).
 */
const PARTITION_MIN_ACK_PENDING = 256;

/**
 * Messages a node's partition consumers hand over in one turn of the event loop, all together. With
 * `MAX_MESSAGES_PER_TURN` (256) each, 64 partitions' batches arriving in one turn held the loop for
 * up to 870 ms in the cluster bench (timers such as lease renewals waited that long). Shared out,
 * 1,024 a turn brought that to 350-590 ms at the same CPU per event; 256 brought it to 220-380 ms
 * but cost about a tenth more CPU per event (smaller commits and changelog batches; BENCHMARKS.md).
 */
export const NODE_MESSAGES_PER_TURN = 4 * MAX_MESSAGES_PER_TURN;

/**
 * Flow control of one partition's consumer: the single-node consumer's bounds shared out over the
 * partitions (the unacknowledged messages with a floor), and its share of `NODE_MESSAGES_PER_TURN`.
 * At the single-node bound each, a node holding 64 partitions could take 131,072 messages in at once
 * (16,384 now), and they and their ingests' promises outlived the young generation: the GC was
 * cluster mode's largest cost (BENCHMARKS.md).
 */
export function partitionFlowControl(partitions: number): { maxAckPending: number; batch: number; messagesPerTurn: number } {
  const maxAckPending = Math.max(PARTITION_MIN_ACK_PENDING, Math.ceil(DEFAULT_MAX_ACK_PENDING / partitions));
  const messagesPerTurn = Math.min(MAX_MESSAGES_PER_TURN, Math.ceil(NODE_MESSAGES_PER_TURN / partitions));
  return { maxAckPending, batch: Math.min(DEFAULT_PULL_BATCH, maxAckPending), messagesPerTurn };
}
