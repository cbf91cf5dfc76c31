import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeliveryScheduler } from '../../src/actors/delivery-scheduler.js';
import type { DueEntry } from '../../src/actors/delivery-scheduler.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('DeliveryScheduler', () => {
  it('fires every entry once, in due order, only when its time has come, with its own project and delivery', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 200_000 }), { maxLength: 200 }), fc.integer({ min: 1, max: 50_000 }), (delays, step) => {
        const clock = new ManualClock();
        const start = clock.now();
        const fired: Array<{ entry: DueEntry; at: number }> = [];
        const scheduler = new DeliveryScheduler(clock, (entry) => fired.push({ entry, at: clock.now() }));
        delays.forEach((delay, index) => scheduler.schedule(start + delay, `p${index % 3}`, String(index)));
        for (let elapsed = 0; elapsed <= 200_000 + step; elapsed += step) clock.advance(step);
        expect(fired).toHaveLength(delays.length);
        // The heap keeps due time, project and delivery in parallel arrays: each must stay with its own.
        expect(fired.map(({ entry }) => entry.deliveryId).sort()).toEqual(delays.map((_, index) => String(index)).sort());
        for (const { entry } of fired) {
          const index = Number(entry.deliveryId);
          expect(entry).toEqual({ dueAt: start + delays[index]!, projectId: `p${index % 3}`, deliveryId: entry.deliveryId });
        }
        for (const { entry, at } of fired) expect(at).toBeGreaterThanOrEqual(entry.dueAt);
        const dueTimes = fired.map(({ entry }) => entry.dueAt);
        expect(dueTimes).toEqual([...dueTimes].sort((a, b) => a - b));
        expect(scheduler.size).toBe(0);
      }),
      { seed: 20261122, numRuns: 100 },
    );
  });

  it('re-arms for an earlier entry scheduled after a later one', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    const scheduler = new DeliveryScheduler(clock, (entry) => fired.push(entry.deliveryId));
    scheduler.schedule(clock.now() + 10_000, 'p', 'late');
    scheduler.schedule(clock.now() + 100, 'p', 'early');
    clock.advance(100);
    expect(fired).toEqual(['early']);
    clock.advance(9_900);
    expect(fired).toEqual(['early', 'late']);
  });

  it('reaches due times beyond the longest single timer', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    const scheduler = new DeliveryScheduler(clock, (entry) => fired.push(entry.deliveryId));
    scheduler.schedule(clock.now() + 10 * 3600_000, 'p', 'ten-hours');
    clock.advance(10 * 3600_000 - 1);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual(['ten-hours']);
  });

  it('stops firing after stop()', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    const scheduler = new DeliveryScheduler(clock, (entry) => fired.push(entry.deliveryId));
    scheduler.schedule(clock.now() + 5, 'p', 'x');
    scheduler.stop();
    clock.advance(10);
    expect(fired).toEqual([]);
  });
});
