import type { Clock } from '../../src/actors/clock.js';

/** A clock that moves only when the test says so; timers fire as time passes them. */
export class ManualClock implements Clock {
  private timers = new Map<number, { at: number; callback: () => void }>();
  private nextHandle = 1;

  constructor(private current = Date.UTC(2026, 10, 22)) {}

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const handle = this.nextHandle++;
    this.timers.set(handle, { at: this.current + delayMs, callback });
    return handle;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward by `ms`, firing every timer that comes due, in due order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, timer]) => timer.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].callback();
    }
    this.current = target;
  }
}
