import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_REDELIVERY_DELAY_MS, redeliveryDelay } from '../../src/transport/redelivery-delay.js';

const middle = () => 0.5;

describe('redeliveryDelay', () => {
  it('doubles with each delivery from the longer of the base and Retry-After, up to the cap', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((deliveryCount) => redeliveryDelay({ deliveryCount, baseMs: 1000, retryAfterMs: 5000, random: middle }));
    expect(delays).toEqual([5000, 10_000, 20_000, 30_000, 30_000, 30_000, 30_000]);
    expect([1, 2, 3].map((deliveryCount) => redeliveryDelay({ deliveryCount, baseMs: 50, random: middle }))).toEqual([50, 100, 200]);
  });

  it('jitters by ±20%, never below Retry-After nor above the cap and its jitter', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 60_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (deliveryCount, baseMs, retryAfterMs, random) => {
        const delay = redeliveryDelay({ deliveryCount, baseMs, retryAfterMs, random: () => random });
        const grown = Math.min(MAX_REDELIVERY_DELAY_MS, Math.max(baseMs, retryAfterMs) * 2 ** Math.max(0, deliveryCount - 1));
        expect(delay).toBeGreaterThanOrEqual(retryAfterMs);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(grown * 0.8));
        expect(delay).toBeLessThanOrEqual(Math.max(retryAfterMs, Math.ceil(grown * 1.2)));
      }),
    );
  });
});
