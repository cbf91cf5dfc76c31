/**
 * Callbacks due one fixed delay after they were added, on a single timer: added in order, they fall
 * due in order, so the timer only ever waits for the oldest. The engine armed a timer of its own for
 * every ingest's flush, every delivery commit and every outbound request (with an AbortController),
 * which the CPU profile of a delivery showed as Node timer and EventTarget work. Like a timer of
 * its own, a pending entry keeps the process alive; with none pending, no timer is left armed.
 */
export class FixedDelayTimers {
  /** Entries not yet due or cancelled, oldest first, from `head` on. */
  private entries: TimerEntry[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly delayMs: number) {}

  /** Calls `onDue` once `delayMs` has passed, unless the returned entry is cancelled first. */
  add(onDue: () => void): TimerEntry {
    const entry: TimerEntry = { due: performance.now() + this.delayMs, onDue };
    this.entries.push(entry);
    if (this.timer === null) this.arm(this.delayMs);
    return entry;
  }

  /** Stops the entry's callback; cheap, and harmless after it ran. */
  cancel(entry: TimerEntry): void {
    entry.onDue = null;
    // Entries mostly end in the order they began: drop the ended ones at the front now, so that
    // they do not wait a whole delay in memory.
    while (this.head < this.entries.length && this.entries[this.head]!.onDue === null) this.head++;
    this.compact();
    if (this.head === this.entries.length && this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(delayMs)));
  }

  private fire(): void {
    this.timer = null;
    const now = performance.now();
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head]!;
      if (entry.onDue !== null && entry.due > now) break;
      this.head++;
      const onDue = entry.onDue;
      entry.onDue = null;
      onDue?.();
    }
    this.compact();
    if (this.head < this.entries.length) this.arm(this.entries[this.head]!.due - now);
  }

  private compact(): void {
    if (this.head === this.entries.length) {
      this.entries = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}

export interface TimerEntry {
  readonly due: number;
  /** Null once it ran or was cancelled. */
  onDue: (() => void) | null;
}
