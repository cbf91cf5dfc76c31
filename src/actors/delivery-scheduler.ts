import type { Clock } from './clock.js';

/** One due time: "attempt delivery `deliveryId` of `projectId` at `dueAt`". */
export interface DueEntry {
  dueAt: number;
  projectId: string;
  deliveryId: string;
}

/** Longest single timer; a far-off due time is reached by re-arming, which keeps clock jumps harmless. */
const MAX_TIMER_MS = 60_000;

/**
 * The due times of every retrying delivery, in a binary min-heap with a single timer armed for the
 * earliest. Entries are never removed early: when a delivery is rescheduled the stale entry stays and
 * the owner ignores it when it fires (its `nextAttemptAt` no longer matches). That keeps every
 * operation O(log n) with no index to maintain. Rebuilt from LMDB on start.
 */
export class DeliveryScheduler {
  private readonly heap: DueEntry[] = [];
  private timer: unknown = null;
  private armedFor = Infinity;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly onDue: (entry: DueEntry) => void,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  schedule(entry: DueEntry): void {
    if (this.stopped) return;
    this.heap.push(entry);
    this.siftUp(this.heap.length - 1);
    if (entry.dueAt < this.armedFor) this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }

  /** Fires every entry due by now; called by the timer, and by tests that move a manual clock. */
  fireDue(): void {
    const now = this.clock.now();
    while (this.heap.length > 0 && this.heap[0]!.dueAt <= now) this.onDue(this.pop());
    this.arm();
  }

  private arm(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    this.armedFor = Infinity;
    const next = this.heap[0];
    if (!next || this.stopped) return;
    this.armedFor = next.dueAt;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, next.dueAt - this.clock.now()));
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      this.fireDue();
    }, delay);
  }

  private pop(): DueEntry {
    const top = this.heap[0]!;
    const last = this.heap.pop()!;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    const entry = heap[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.dueAt <= entry.dueAt) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = entry;
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    const entry = heap[index]!;
    const length = heap.length;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && heap[right]!.dueAt < heap[left]!.dueAt ? right : left;
      if (heap[child]!.dueAt >= entry.dueAt) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = entry;
  }
}
