import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NODE_MESSAGES_PER_TURN, partitionFlowControl } from '../../src/cluster/flow-control.js';
import { DEFAULT_MAX_ACK_PENDING, DEFAULT_PULL_BATCH, MAX_MESSAGES_PER_TURN } from '../../src/transport/nats.js';

describe('partitionFlowControl', () => {
  it('gives one partition the single-node bounds and 64 partitions 256 each', () => {
    expect(partitionFlowControl(1)).toEqual({ maxAckPending: DEFAULT_MAX_ACK_PENDING, batch: DEFAULT_PULL_BATCH, messagesPerTurn: MAX_MESSAGES_PER_TURN });
    expect(partitionFlowControl(8)).toEqual({ maxAckPending: 256, batch: 256, messagesPerTurn: 128 });
    expect(partitionFlowControl(64)).toEqual({ maxAckPending: 256, batch: 256, messagesPerTurn: 16 });
    expect(partitionFlowControl(1024)).toEqual({ maxAckPending: 256, batch: 256, messagesPerTurn: 1 });
  });

  it('lets a node holding every partition hold at least what a single node holds, more only by the rounding up or the floor, and never pull more than it may hold', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1024 }), (partitions) => {
        const { maxAckPending, batch } = partitionFlowControl(partitions);
        const nodeWide = maxAckPending * partitions;
        return (
          batch >= 1 && batch <= maxAckPending && batch <= DEFAULT_PULL_BATCH &&
          maxAckPending >= 256 && nodeWide >= DEFAULT_MAX_ACK_PENDING &&
          // Over the single-node bound only by the rounding up, or by the floor of 256 a partition.
          nodeWide <= Math.max(DEFAULT_MAX_ACK_PENDING + partitions - 1, 256 * partitions)
        );
      }),
      { seed: 20261126, numRuns: 1024 },
    );
  });

  it('hands over per turn at least one message a partition, never more than a single node, and node-wide the shared budget but for rounding', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4096 }), (partitions) => {
        const { messagesPerTurn } = partitionFlowControl(partitions);
        return messagesPerTurn >= 1 && messagesPerTurn <= MAX_MESSAGES_PER_TURN && messagesPerTurn * partitions <= Math.max(NODE_MESSAGES_PER_TURN + partitions - 1, partitions);
      }),
      { seed: 20261126, numRuns: 1024 },
    );
  });
});
