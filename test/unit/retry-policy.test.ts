import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RETRY_JITTER_RATIO, decideRetry, unrecordedStartWaitMs, type RetryInput } from '../../src/actors/retry-policy.js';
import { SVIX_RETRY_SCHEDULE_MS } from '../../src/config/duration.js';

// Fixed seed: a failure reproduces exactly; fast-check prints the counterexample and path.
const PROPERTY_PARAMS = { seed: 20_261_121, numRuns: 500 } as const;

const scheduleArb = fc.array(fc.integer({ min: 0, max: 36_000_000 }), { minLength: 1, maxLength: 12 });
const nowArb = fc.integer({ min: 0, max: 4_102_444_800_000 });
// A value in [0, 1) like Math.random, including both ends of the range.
const unitArb = fc.oneof(fc.constant(0), fc.constant(1 - Number.EPSILON), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));
const retryAfterArb = fc.option(fc.integer({ min: 0, max: 172_800_000 }), { nil: null });

/** A schedule together with a round-attempt count that still leaves an attempt to make. */
const retryableArb = scheduleArb.chain((schedule) =>
  fc.record({ schedule: fc.constant(schedule), roundAttempts: fc.integer({ min: 0, max: schedule.length - 1 }) }),
);

function input(overrides: Partial<RetryInput> & Pick<RetryInput, 'schedule' | 'roundAttempts'>): RetryInput {
  return { outcome: { retryAfterMs: null }, now: 1_000_000, random: () => 0.5, jitter: true, ...overrides };
}

describe('decideRetry', () => {
  it('keeps a jittered delay within ±20% of the schedule entry', () => {
    fc.assert(
      fc.property(retryableArb, nowArb, unitArb, ({ schedule, roundAttempts }, now, unit) => {
        const decision = decideRetry(input({ schedule, roundAttempts, now, random: () => unit }));
        const base = schedule[roundAttempts]!;
        expect(decision.kind).toBe('retry');
        if (decision.kind !== 'retry') return;
        expect(decision.dueAt).toBe(now + decision.delayMs);
        expect(Number.isInteger(decision.delayMs)).toBe(true);
        expect(decision.delayMs).toBeGreaterThanOrEqual(base * (1 - RETRY_JITTER_RATIO));
        expect(decision.delayMs).toBeLessThanOrEqual(base * (1 + RETRY_JITTER_RATIO));
        if (base === 0) expect(decision.delayMs).toBe(0);
      }),
      PROPERTY_PARAMS,
    );
  });

  it('uses the schedule entry exactly when jitter is off, without consulting random', () => {
    fc.assert(
      fc.property(retryableArb, nowArb, ({ schedule, roundAttempts }, now) => {
        const random = (): number => {
          throw new Error('random must not be called without jitter');
        };
        const decision = decideRetry(input({ schedule, roundAttempts, now, random, jitter: false }));
        expect(decision).toEqual({ kind: 'retry', dueAt: now + schedule[roundAttempts]!, delayMs: schedule[roundAttempts]! });
      }),
      PROPERTY_PARAMS,
    );
  });

  it('treats Retry-After as a floor, never as a ceiling', () => {
    fc.assert(
      fc.property(retryableArb, nowArb, unitArb, retryAfterArb, fc.boolean(), ({ schedule, roundAttempts }, now, unit, retryAfterMs, jitter) => {
        const withFloor = decideRetry(input({ schedule, roundAttempts, now, jitter, random: () => unit, outcome: { retryAfterMs } }));
        const without = decideRetry(input({ schedule, roundAttempts, now, jitter, random: () => unit }));
        if (withFloor.kind !== 'retry' || without.kind !== 'retry') throw new Error('expected retry');
        expect(withFloor.delayMs).toBeGreaterThanOrEqual(retryAfterMs ?? 0);
        expect(withFloor.delayMs).toBe(Math.max(without.delayMs, retryAfterMs ?? 0));
      }),
      PROPERTY_PARAMS,
    );
  });

  it('dead-letters exactly when the round has used every attempt', () => {
    fc.assert(
      fc.property(scheduleArb, fc.integer({ min: 0, max: 40 }), unitArb, retryAfterArb, (schedule, roundAttempts, unit, retryAfterMs) => {
        const decision = decideRetry(input({ schedule, roundAttempts, random: () => unit, outcome: { retryAfterMs } }));
        expect(decision.kind).toBe(roundAttempts >= schedule.length ? 'dead_letter' : 'retry');
      }),
      PROPERTY_PARAMS,
    );
  });

  it('decides the same way for the same random source', () => {
    fc.assert(
      fc.property(retryableArb, nowArb, fc.integer(), retryAfterArb, ({ schedule, roundAttempts }, now, seed, retryAfterMs) => {
        const decide = (): ReturnType<typeof decideRetry> =>
          decideRetry(input({ schedule, roundAttempts, now, random: seededRandom(seed), outcome: { retryAfterMs } }));
        expect(decide()).toEqual(decide());
      }),
      PROPERTY_PARAMS,
    );
  });

  it('walks the Svix schedule: 8 attempts per round, then dead-letter', () => {
    const delays: number[] = [];
    for (let roundAttempts = 1; ; roundAttempts += 1) {
      const decision = decideRetry(input({ schedule: SVIX_RETRY_SCHEDULE_MS, roundAttempts, now: 0, jitter: false }));
      if (decision.kind === 'dead_letter') break;
      delays.push(decision.delayMs);
    }
    // The first attempt (schedule[0]) is made by the dispatcher, so 7 failures lead to 7 retries.
    expect(delays).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('rejects a negative or fractional attempt count', () => {
    expect(() => decideRetry(input({ schedule: [0], roundAttempts: -1 }))).toThrow(RangeError);
    expect(() => decideRetry(input({ schedule: [0], roundAttempts: 0.5 }))).toThrow(RangeError);
  });
});

/** mulberry32: a tiny deterministic PRNG so two runs can be compared call for call. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('unrecordedStartWaitMs', () => {
  it('doubles from 100 ms for each unrecorded start in a row, up to 5 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map(unrecordedStartWaitMs)).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
  });
});
