import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EndpointPacer, TokenBucket, bucketCapacity } from '../../src/actors/endpoint-pacing.js';
import { ManualClock } from '../helpers/manual-clock.js';

/** Issue 35's per-webhook limits: the token bucket behind `rateLimitPerSecond`, and the pacer the lifecycle asks. */

/** A bucket at `rate` on a clock the test moves. */
function bucketAt(rate: number, start = 0) {
  let now = start;
  const bucket = new TokenBucket(rate, () => now);
  return { bucket, at: (ms: number) => (now = ms) };
}

/**
 * An independent model of the same bucket: the generic cell rate algorithm (virtual scheduling).
 * Times are scaled by the rate so that everything is an integer: one token every 1000 units, a burst
 * of `capacity`. A take at `t` conforms when `t·rate >= tat - (capacity - 1)·1000`.
 */
function gcra(rate: number) {
  const tolerance = (bucketCapacity(rate) - 1) * 1000;
  let tat = -Infinity;
  return (t: number): boolean => {
    const scaled = t * rate;
    if (scaled < tat - tolerance) return false;
    tat = Math.max(tat, scaled) + 1000;
    return true;
  };
}

const rateArb = fc.oneof(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 2_000 }), fc.constantFrom(1, 9, 10, 11, 500, 100_000));
/** Increasing whole-millisecond times (the system clock's), bunched and spread. */
const gapArb = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 2_500 }));
/** Steps at increasing times; `probe`: after the takes, wait for the next token as the pacer's timer would. */
const stepsArb = fc.array(fc.record({ gap: gapArb, probe: fc.boolean() }), { minLength: 1, maxLength: 150 });

describe('token bucket', () => {
  it('holds a fiftieth of a second at least one token, and starts full', () => {
    expect([1, 9, 50, 51, 100, 500, 100_000].map(bucketCapacity)).toEqual([1, 1, 1, 2, 2, 10, 2_000]);
    const { bucket } = bucketAt(500);
    expect(bucket.tokens).toBe(10);
    for (let i = 0; i < 10; i++) expect(bucket.take()).toBe(true);
    expect(bucket.take()).toBe(false);
    // One token every 2 ms at 500/s.
    expect(bucket.waitMs()).toBe(2);
  });

  it('refills continuously at the rate, never above its capacity', () => {
    const { bucket, at } = bucketAt(100);
    expect(bucket.take() && bucket.take()).toBe(true);
    expect(bucket.waitMs()).toBe(10);
    at(9);
    expect(bucket.take()).toBe(false);
    at(10);
    expect(bucket.take()).toBe(true);
    at(60_000);
    expect(bucket.tokens).toBe(2);
  });

  it('in any one-second window, at most rate + capacity takes pass, and a take is refused only when no token is due', () => {
    fc.assert(
      fc.property(rateArb, stepsArb, (rate, steps) => {
        const { bucket, at } = bucketAt(rate);
        const model = gcra(rate);
        const taken: number[] = [];
        let now = 0;
        for (const { gap, probe } of steps) {
          now += gap;
          at(now);
          // As many takes as the moment allows, as a pump makes, and one more that is refused.
          for (;;) {
            const allowed = model(now);
            if (bucket.take() !== allowed) expect.fail(`at ${now} ms the bucket ${allowed ? 'refused' : 'allowed'} a take the model ${allowed ? 'allows' : 'refuses'}`);
            if (!allowed) break;
            taken.push(now);
          }
          if (!probe) continue;
          // Refused: the wait it names is exactly when the next token is due.
          const waitMs = bucket.waitMs();
          expect(waitMs).toBeGreaterThan(0);
          if (waitMs > 1) {
            at(now + waitMs - 1);
            expect(bucket.waitMs()).toBeGreaterThan(0);
          }
          now += waitMs;
          at(now);
          expect(bucket.waitMs()).toBe(0);
        }
        // Sliding one-second windows [t, t + 1000], each starting at a take.
        const bound = rate + bucketCapacity(rate);
        let end = 0;
        for (let start = 0; start < taken.length; start++) {
          while (end < taken.length && taken[end]! <= taken[start]! + 1000) end++;
          if (end - start > bound) expect.fail(`${end - start} takes in the second from ${taken[start]} ms, more than ${bound}`);
        }
      }),
      { seed: 20261128, numRuns: 300 },
    );
  });

  it('at 500/s, a backlog taken as fast as allowed never puts more than 510 in a second', () => {
    const { bucket, at } = bucketAt(500);
    const taken: number[] = [];
    for (let now = 0; now <= 5_000; now++) {
      at(now);
      while (bucket.take()) taken.push(now);
    }
    const most = Math.max(...taken.map((start) => taken.filter((t) => t >= start && t <= start + 1000).length));
    expect(most).toBeLessThanOrEqual(510);
    // And no slower than the rate: 10 at once, then 500 a second.
    expect(taken.length).toBe(10 + 2_500);
  });
});

/** A pacer at `rate` per second on a node allowing 50 in flight, counting its wakes. */
function pacerAt(rate: number) {
  const clock = new ManualClock(0);
  let wakes = 0;
  const pacer = new EndpointPacer(clock, 50, () => wakes++);
  pacer.configure({ maxConcurrency: null, rateLimitPerSecond: rate });
  return { clock, pacer, wakes: () => wakes };
}

describe('endpoint pacer', () => {
  it('caps attempts in flight at the lower of the node\'s setting and maxConcurrency', () => {
    const pacer = new EndpointPacer(new ManualClock(), 50, () => {});
    expect(pacer.mayStart(49)).toBe(true);
    expect(pacer.mayStart(50)).toBe(false);
    pacer.configure({ maxConcurrency: 2, rateLimitPerSecond: null });
    expect(pacer.mayStart(1)).toBe(true);
    expect(pacer.mayStart(2)).toBe(false);
    // A stored limit above a node's own setting (a node with a lower one took the project over) is that setting.
    pacer.configure({ maxConcurrency: 80, rateLimitPerSecond: null });
    expect(pacer.mayStart(50)).toBe(false);
    pacer.configure(undefined);
    expect(pacer.mayStart(49)).toBe(true);
  });

  it('out of tokens, wakes the lifecycle once, when the next token is due', () => {
    const { clock, pacer, wakes } = pacerAt(100);
    for (let i = 0; i < 2; i++) {
      expect(pacer.mayStart(0)).toBe(true);
      pacer.started();
    }
    expect(pacer.mayStart(0)).toBe(false);
    expect(pacer.mayStart(0)).toBe(false);
    clock.advance(9);
    expect(wakes()).toBe(0);
    clock.advance(1);
    expect(wakes()).toBe(1);
    expect(pacer.mayStart(0)).toBe(true);
  });

  it('takes new limits at once: a new rate keeps the tokens held (up to its capacity), no limit lets everything through', () => {
    const { clock, pacer, wakes } = pacerAt(500);
    for (let i = 0; i < 10; i++) pacer.started();
    expect(pacer.mayStart(0)).toBe(false);
    // Slower now: the empty bucket stays empty, its next token is due at the new rate; the old timer is gone.
    pacer.configure({ maxConcurrency: null, rateLimitPerSecond: 1 });
    clock.advance(500);
    expect(wakes()).toBe(0);
    expect(pacer.mayStart(0)).toBe(false);
    clock.advance(500);
    expect(wakes()).toBe(1);
    expect(pacer.mayStart(0)).toBe(true);
    pacer.configure({ maxConcurrency: null, rateLimitPerSecond: null });
    for (let i = 0; i < 100; i++) {
      expect(pacer.mayStart(0)).toBe(true);
      pacer.started();
    }
  });
});
