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
 *
 * The heap is three parallel arrays rather than an array of entries: a restart schedules a million
 * resumed deliveries at once, and an object each was a million allocations and 27 MB more heap.
 */
export class DeliveryScheduler {
  private readonly dueAts: number[] = [];
  private readonly projectIds: string[] = [];
  private readonly deliveryIds: string[] = [];
  private timer: unknown = null;
  private armedFor = Infinity;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly onDue: (entry: DueEntry) => void,
  ) {}

  get size(): number {
    return this.dueAts.length;
  }

  /** Attempt delivery `deliveryId` of `projectId` at `dueAt`. */
  schedule(dueAt: number, projectId: string, deliveryId: string): void {
    if (this.stopped) return;
    this.dueAts.push(dueAt);
    this.projectIds.push(projectId);
    this.deliveryIds.push(deliveryId);
    this.siftUp(this.dueAts.length - 1);
    if (dueAt < this.armedFor) this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }

  /** Fires every entry due by now; called by the timer, and by tests that move a manual clock. */
  fireDue(): void {
    const now = this.clock.now();
    while (this.dueAts.length > 0 && this.dueAts[0]! <= now) this.onDue(this.pop());
    this.arm();
  }

  private arm(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    this.armedFor = Infinity;
    if (this.dueAts.length === 0 || this.stopped) return;
    const dueAt = this.dueAts[0]!;
    this.armedFor = dueAt;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, dueAt - this.clock.now()));
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      this.fireDue();
    }, delay);
  }

  private pop(): DueEntry {
    const top: DueEntry = { dueAt: this.dueAts[0]!, projectId: this.projectIds[0]!, deliveryId: this.deliveryIds[0]! };
    const last = this.dueAts.length - 1;
    this.move(last, 0);
    this.dueAts.pop();
    this.projectIds.pop();
    this.deliveryIds.pop();
    if (last > 0) this.siftDown(0);
    return top;
  }

  /** Copies the entry at `from` into the slot `to`. */
  private move(from: number, to: number): void {
    this.place(to, this.dueAts[from]!, this.projectIds[from]!, this.deliveryIds[from]!);
  }

  private siftUp(index: number): void {
    const dueAts = this.dueAts;
    const dueAt = dueAts[index]!;
    const projectId = this.projectIds[index]!;
    const deliveryId = this.deliveryIds[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (dueAts[parent]! <= dueAt) break;
      this.move(parent, index);
      index = parent;
    }
    this.place(index, dueAt, projectId, deliveryId);
  }

  private siftDown(index: number): void {
    const dueAts = this.dueAts;
    const dueAt = dueAts[index]!;
    const projectId = this.projectIds[index]!;
    const deliveryId = this.deliveryIds[index]!;
    const length = dueAts.length;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && dueAts[right]! < dueAts[left]! ? right : left;
      if (dueAts[child]! >= dueAt) break;
      this.move(child, index);
      index = child;
    }
    this.place(index, dueAt, projectId, deliveryId);
  }

  private place(index: number, dueAt: number, projectId: string, deliveryId: string): void {
    this.dueAts[index] = dueAt;
    this.projectIds[index] = projectId;
    this.deliveryIds[index] = deliveryId;
  }
}
