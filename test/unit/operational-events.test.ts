import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { operationalStoreId, projectOfStoreId } from '../../src/actors/operational-events.js';
import { partitionOf } from '../../src/sdk/partition.js';

describe('operational store ids', () => {
  it('name their project back and hash to its cluster partition', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), fc.integer({ min: 1, max: 1024 }), (projectId, partitions) => {
        expect(projectOfStoreId(operationalStoreId(projectId))).toBe(projectId);
        expect(projectOfStoreId(projectId)).toBe(projectId);
        expect(partitionOf(operationalStoreId(projectId), partitions)).toBe(partitionOf(projectId, partitions));
      }),
      { seed: 1515, numRuns: 300 },
    );
  });
});
