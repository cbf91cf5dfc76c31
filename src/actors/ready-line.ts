import type { WebhookRecord } from '../store/records.js';
import { FifoQueue } from './fifo-queue.js';
import type { LiveDelivery } from './live-delivery.js';
import type { LiveIndex } from './live-index.js';
import { lineHead } from './ordered-line.js';

type Ordering = NonNullable<WebhookRecord['ordering']>;

/**
 * Which due delivery a lifecycle attempts next, kept apart from how it attempts one, so that the
 * two orderings live in one place: unordered, the due ones in the order they became due; `fifo`,
 * only the head of the ordered line (ordered-line.ts), alone. A due delivery is marked `queued`
 * either way, so that the line reads it at its head and a change of ordering keeps what is due.
 */
export class ReadyLine {
  /** Due deliveries in the order they became due (unordered delivery only). */
  private ready = new FifoQueue<LiveDelivery>();
  /** Deliveries were resumed from LMDB (in status order): the line is put in ingest order before its head is taken. */
  private lineUnsorted = false;
  private lineSortQueued = false;
  /** Due deliveries that left memory while still in the ready queue, since it was last rebuilt. */
  private forgotten = 0;

  constructor(
    private readonly live: LiveIndex<LiveDelivery>,
    private ordering: Ordering,
    /** The line was sorted: its head may be attempted now. */
    private readonly sorted: () => void,
  ) {}

  /** Due deliveries waiting for an attempt (unordered delivery; the line counts none). */
  get length(): number {
    return this.ready.length;
  }

  get ordered(): boolean {
    return this.ordering === 'fifo';
  }

  /** Deliveries are being resumed from LMDB: the line is sorted before its head is taken. */
  resumed(): void {
    this.lineUnsorted = true;
  }

  setOrdering(ordering: Ordering): void {
    if (ordering === this.ordering) return;
    this.ordering = ordering;
    // Due deliveries keep `queued`: the line reads it at its head; back to unordered, they queue in line order.
    this.ready = new FifoQueue<LiveDelivery>();
    if (ordering === 'unordered') for (const delivery of this.live.values()) if (delivery.queued) this.ready.push(delivery);
  }

  /** Marks the delivery due; false when it already was. */
  add(delivery: LiveDelivery): boolean {
    if (delivery.queued) return false;
    delivery.queued = true;
    if (this.ordering === 'unordered') this.ready.push(delivery);
    return true;
  }

  /**
   * A due delivery leaves memory before its attempt (the window is over its size): no longer marked
   * due. The ready queue skips it (`shift` callers check it is still held); once such ones are most
   * of the queue, it is rebuilt without them, so a paused endpoint's queue does not keep them.
   */
  forget(delivery: LiveDelivery): void {
    delivery.queued = false;
    if (this.ordering !== 'unordered' || ++this.forgotten < 1024 || this.forgotten * 2 < this.ready.length) return;
    const kept = new FifoQueue<LiveDelivery>();
    for (let next = this.ready.shift(); next; next = this.ready.shift()) if (next.queued) kept.push(next);
    this.ready = kept;
    this.forgotten = 0;
  }

  /** The next due delivery in the order it became due (unordered delivery), no longer marked due. */
  shift(): LiveDelivery | undefined {
    const delivery = this.ready.shift();
    if (delivery) delivery.queued = false;
    return delivery;
  }

  /** The line's head if it is due, no longer marked due (`fifo`; call only with no attempt in flight). */
  takeHead(): LiveDelivery | undefined {
    if (this.lineUnsorted) {
      // Once, after every resumed delivery is in: a restart takes them in in one synchronous loop.
      if (!this.lineSortQueued) {
        this.lineSortQueued = true;
        queueMicrotask(() => {
          this.lineSortQueued = false;
          this.lineUnsorted = false;
          this.live.sortById();
          this.sorted();
        });
      }
      return undefined;
    }
    const head = lineHead(this.live);
    if (!head?.queued) return undefined;
    head.queued = false;
    return head;
  }
}
