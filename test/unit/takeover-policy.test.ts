import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TakeoverPolicy } from '../../src/cluster/takeover-policy.js';

/**
 * The takeover rules of docs/nemesis.md finding 5, over random histories: a node whose takeover of
 * a partition failed leaves its lease free for longer than the grace after which another node
 * stands in; a stand-in never takes a partition it owns anyway, nor one free for less than the
 * grace; and it keeps one for a bounded time only (40 ticks at the most), so its owner gets it back.
 */

const TICK = 100;

type Step = { kind: 'advance'; ms: number } | { kind: 'fail'; partition: number } | { kind: 'acquire'; partition: number; standIn: boolean } | { kind: 'orphans'; free: number[]; desired: number[] };

const step = fc.oneof(
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 5_000 }) }),
  fc.record({ kind: fc.constant('fail' as const), partition: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('acquire' as const), partition: fc.integer({ min: 0, max: 3 }), standIn: fc.boolean() }),
  fc.record({ kind: fc.constant('orphans' as const), free: fc.uniqueArray(fc.integer({ min: 0, max: 3 })), desired: fc.uniqueArray(fc.integer({ min: 0, max: 3 })) }),
);

describe('TakeoverPolicy', () => {
  it('backs a failed takeover off past the stand-in grace, stands in only for free partitions not its own, and hands a stand-in back in time', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.double({ min: 0, max: 0.999_999, noNaN: true }), (steps: Step[], jitter) => {
        let now = 0;
        const policy = new TakeoverPolicy({ tickMs: TICK, now: () => now, random: () => jitter });
        const failures = new Map<number, number>();
        const freeSince = new Map<number, number>();
        const standInSince = new Map<number, number>();
        for (const current of steps) {
          if (current.kind === 'advance') now += current.ms;
          else if (current.kind === 'fail') {
            const count = (failures.get(current.partition) ?? 0) + 1;
            failures.set(current.partition, count);
            const waitMs = policy.failed(current.partition);
            // Longer than the grace (4 ticks): another node may stand in before this one tries again.
            expect(waitMs).toBeGreaterThan(4 * TICK);
            expect(waitMs).toBeLessThanOrEqual(1.25 * 32 * TICK);
            expect(policy.mayTake(current.partition)).toBe(false);
            now += waitMs;
            expect(policy.mayTake(current.partition)).toBe(true);
            now -= waitMs;
          } else if (current.kind === 'acquire') {
            policy.acquired(current.partition, current.standIn);
            failures.delete(current.partition);
            if (current.standIn) standInSince.set(current.partition, now);
            else standInSince.delete(current.partition);
          } else {
            for (const partition of freeSince.keys()) if (!current.free.includes(partition)) freeSince.delete(partition);
            for (const partition of current.free) if (!freeSince.has(partition)) freeSince.set(partition, now);
            const desired = new Set(current.desired);
            for (const partition of policy.orphans(current.free, desired)) {
              expect(desired.has(partition)).toBe(false);
              expect(current.free).toContain(partition);
              expect(now - freeSince.get(partition)!).toBeGreaterThanOrEqual(4 * TICK);
              expect(policy.mayTake(partition)).toBe(true);
            }
          }
          for (let partition = 0; partition < 4; partition++) {
            // Never kept when neither its own nor a stand-in within its time.
            const since = standInSince.get(partition);
            if (since === undefined || now - since >= 40 * TICK) expect(policy.keeps(partition, false)).toBe(false);
          }
        }
      }),
      { seed: 36_045, numRuns: 300 },
    );
  });

  it('hands a stand-in back after 8 ticks, doubling for each stand-in soon after the last, up to 40, and 8 again after a quiet while', () => {
    let now = 0;
    const policy = new TakeoverPolicy({ tickMs: TICK, now: () => now, random: () => 0.5 });
    const keptFor = (): number => {
      policy.acquired(3, true);
      const since = now;
      while (policy.keeps(3, false)) now += TICK;
      policy.released(3);
      return (now - since) / TICK;
    };
    expect([keptFor(), keptFor(), keptFor(), keptFor(), keptFor()]).toEqual([8, 16, 32, 40, 40]);
    // Its owner took it back and kept it: the next stand-in is a short one again.
    now += 160 * TICK;
    expect(keptFor()).toBe(8);
    // Its own by rendezvous hashing: kept, whatever the stand-in time.
    policy.acquired(3, true);
    now += 100 * TICK;
    expect(policy.keeps(3, true)).toBe(true);
  });

  it('doubles the wait with each failure in a row, up to 32 ticks, and starts again after a success', () => {
    let now = 0;
    const policy = new TakeoverPolicy({ tickMs: TICK, now: () => now, random: () => 0.5 });
    expect([1, 2, 3, 4, 5].map(() => policy.failed(7))).toEqual([600, 1_200, 2_400, 3_200, 3_200]);
    policy.acquired(7, false);
    expect(policy.failed(7)).toBe(600);
  });
});
