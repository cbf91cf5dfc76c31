import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FixedDelayTimers } from '../../src/fixed-delay-timers.js';

describe('FixedDelayTimers', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls each entry once, its delay after it was added, except those cancelled', () => {
    const timers = new FixedDelayTimers(100);
    const fired: string[] = [];
    timers.add(() => fired.push('a'));
    vi.advanceTimersByTime(10);
    const b = timers.add(() => fired.push('b'));
    vi.advanceTimersByTime(10);
    timers.add(() => fired.push('c'));
    timers.cancel(b);
    vi.advanceTimersByTime(79);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['a']);
    vi.advanceTimersByTime(19);
    expect(fired).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['a', 'c']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('leaves no timer armed once every pending entry is cancelled, and arms again for the next', () => {
    const timers = new FixedDelayTimers(50);
    const entries = Array.from({ length: 3 }, () => timers.add(() => expect.unreachable()));
    for (const entry of entries) timers.cancel(entry);
    expect(vi.getTimerCount()).toBe(0);
    timers.cancel(entries[0]!);
    let fired = 0;
    timers.add(() => fired++);
    vi.advanceTimersByTime(50);
    expect(fired).toBe(1);
  });
});
