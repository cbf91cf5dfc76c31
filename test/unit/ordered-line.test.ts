import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextDeliveryId } from '../../src/actors/ordered-line.js';
import { newDeliveryId } from '../../src/store/ids.js';

describe('nextDeliveryId', () => {
  it('makes strictly increasing, well-formed delivery ids from ids made in the same or earlier milliseconds', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -2, max: 2 }), { minLength: 1, maxLength: 200 }), (steps) => {
        let now = 1_790_000_000_000;
        let last = '';
        for (const step of steps) {
          now += step;
          const id = nextDeliveryId(newDeliveryId(now), last);
          expect(id > last).toBe(true);
          expect(id).toMatch(/^dlv_[0-9A-Z]{26}$/);
          last = id;
        }
      }),
      { seed: 1515, numRuns: 300 },
    );
  });

  it('carries over the last characters', () => {
    expect(nextDeliveryId('dlv_00000000000000000000000000', 'dlv_0000000000000000000000000Z')).toBe('dlv_00000000000000000000000010');
    expect(nextDeliveryId('dlv_00000000000000000000000000', 'dlv_01KZZZZZZZZZZZZZZZZZZZZZZZ')).toBe('dlv_01M00000000000000000000000');
    expect(nextDeliveryId('dlv_00000000000000000000000000', 'dlv_0000000000000000000000000A')).toBe('dlv_0000000000000000000000000B');
  });
});
