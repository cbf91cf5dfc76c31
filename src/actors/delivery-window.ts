import type { DeliveryStatus } from '../machines/index.js';
import type { DuePosition, WaitingEntry } from '../store/delivery-tables.js';
import type { HooklineStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { WorkTurns } from './work-turns.js';

/**
 * Which of a lifecycle's waiting deliveries (pending, delivering, retrying) are held in memory: a
 * window of at most `size`, the rest waiting on disk, so that memory does not grow with a backlog.
 *
 * The window holds what is due soon and what is in flight. A retrying delivery due later than
 * `DUE_HORIZON_MS` from now leaves memory once its steps are stored (the lifecycle evicts it), and
 * so does any waiting one while the window is over its size; a new delivery is not held when the
 * window is full or older ones wait on disk. The window reads back what waits on disk:
 * - pending deliveries in id order, from the status index (a pending one is due at its creation or
 *   its new round, so id order is about due order, and the oldest go first);
 * - retrying deliveries in due order, from the due index, those due within the horizon;
 * - for ordered (`fifo`) delivery, every waiting one in id order: the line's head must be held.
 *
 * Two cursors say where on disk unheld deliveries may be: every pending (or, ordered, waiting)
 * delivery before `idScanFrom` is held, and so is every retrying one before `dueScanFrom`; null
 * means none is left on disk. A delivery that leaves memory moves its cursor back to itself, so
 * the cursors never skip one. A refill skips the held ones it meets.
 */

/** A retrying delivery due within this is held (and in the scheduler's heap); later ones wait on disk. */
export const DUE_HORIZON_MS = 60_000;
/**
 * Deliveries one refill reads at most: a window of 10,000 read in one go held the event loop (and
 * every other project's requests) for tens of milliseconds; the rest is read in the next turns.
 */
const REFILL_TURN = 1_000;
/** Longest timer for the next refill by due time: a clock jump is caught up with within this. */
const MAX_REFILL_TIMER_MS = 60_000;

const ORDERED_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivering', 'retrying'];
const PENDING: readonly DeliveryStatus[] = ['pending'];
const DELIVERING: readonly DeliveryStatus[] = ['delivering'];

/** What the window hands back to its lifecycle. */
export interface WindowHost {
  /** Takes a waiting delivery read from disk into memory. */
  load(entry: WaitingEntry): void;
  /** A write nobody waits for failed. */
  onError(error: unknown): void;
}

export class DeliveryWindow {
  private idScanFrom: string | null = null;
  private dueScanFrom: DuePosition | null = null;
  private timer: unknown = null;
  private refillQueued = false;
  private stopped = false;

  constructor(
    private readonly projectId: string,
    private readonly store: HooklineStore,
    private readonly clock: Clock,
    /** The node's deferred work, where refills take their turns. */
    private readonly turns: WorkTurns,
    /** Deliveries held at most, before the lifecycle evicts and the window stops loading. */
    readonly size: number,
    /** The lifecycle's deliveries held in memory (waiting, and final ones whose last step is being written). */
    private readonly held: { readonly size: number; get(id: string): unknown },
    /** Its ready line: whether deliveries go out in id order (`fifo`). */
    private readonly line: { readonly ordered: boolean },
    private readonly host: WindowHost,
  ) {}

  private get heldCount(): number {
    return this.held.size;
  }

  private get ordered(): boolean {
    return this.line.ordered;
  }

  /** Whether deliveries wait on disk unheld (counted from the cursors: some may have moved on since). */
  get hasUnheld(): boolean {
    return this.idScanFrom !== null || this.dueScanFrom !== null;
  }

  /** Whether there is room for one more. */
  get hasRoom(): boolean {
    return this.heldCount < this.size;
  }

  /** Whether a new delivery is held: room, and no pending one waiting on disk that should go first. */
  mayHoldNew(): boolean {
    return this.idScanFrom === null && this.hasRoom;
  }

  /**
   * At start or a partition's takeover: everything waiting is on disk. The deliveries caught
   * mid-attempt are all taken in at once (their attempts are made again), then the window fills.
   */
  startFromDisk(): void {
    if (!this.ordered) for (const entry of this.store.deliveryTables.waitingById(this.projectId, DELIVERING, '', Infinity, () => false).found) this.host.load(entry);
    this.idScanFrom = '';
    this.dueScanFrom = this.ordered ? null : { dueAt: -Infinity, id: '' };
    this.refill();
  }

  /** A delivery left memory (or was never held): a refill reads it back from disk. */
  unheld(id: string, status: DeliveryStatus, dueAt: number | null): void {
    if (status === 'retrying' && !this.ordered && dueAt !== null) {
      if (this.dueScanFrom === null || before({ dueAt, id }, this.dueScanFrom)) this.dueScanFrom = { dueAt, id };
    } else if (this.idScanFrom === null || id < this.idScanFrom) {
      this.idScanFrom = id;
    }
    this.requestRefill();
  }

  /** The ordering changed: every waiting delivery is read again in the new order. */
  reorder(): void {
    if (!this.hasUnheld) return;
    this.idScanFrom = '';
    this.dueScanFrom = this.ordered ? null : { dueAt: -Infinity, id: '' };
    this.requestRefill();
  }

  /**
   * Refills soon (once for several requests in one turn), when something waits on disk and there
   * is room: in a turn of the node's deferred work (work-turns.ts), after the I/O waiting now and in
   * turn with other projects.
   */
  requestRefill(): void {
    if (this.refillQueued || this.stopped || !this.hasUnheld) return;
    this.refillQueued = true;
    this.turns.request(() => {
      this.refillQueued = false;
      this.refill();
    });
  }

  /** Takes deliveries waiting on disk into memory while there is room: the oldest pending first, then those due soonest. */
  refill(): void {
    if (this.stopped) return;
    let room = Math.min(REFILL_TURN, this.size - this.heldCount);
    // Under a sustained backlog room frees one delivery at a time: read the disk in batches, not one range per delivery.
    if (room < Math.min(REFILL_TURN, Math.max(1, Math.floor(this.size / 8))) && this.heldCount > 0) return;
    const skip = (id: string) => this.held.get(id) !== undefined;
    if (room > 0 && this.idScanFrom !== null) {
      const { found, next } = this.store.deliveryTables.waitingById(this.projectId, this.ordered ? ORDERED_STATUSES : PENDING, this.idScanFrom, room, skip);
      this.idScanFrom = next;
      for (const entry of found) this.host.load(entry);
      room -= found.length;
    }
    if (room > 0 && this.dueScanFrom !== null) {
      const { found, next, stale } = this.store.deliveryTables.dueRetrying(this.projectId, this.dueScanFrom, this.clock.now() + DUE_HORIZON_MS, room, skip);
      this.dueScanFrom = next;
      for (const entry of found) this.host.load(entry);
      this.store.removeStaleDue(stale).catch((error: unknown) => this.host.onError(error));
      room -= found.length;
    }
    // A full turn's worth read: the rest, if the window has room for it, in the next turn.
    if (room === 0 && this.heldCount < this.size) this.requestRefill();
    this.armDueTimer();
  }

  /**
   * Refills when the first retrying delivery on disk comes within the horizon. One within it
   * already was left for want of room: the refill that room asks for (`requestRefill`) takes it.
   */
  private armDueTimer(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    if (this.dueScanFrom === null || this.stopped) return;
    const delay = Math.min(MAX_REFILL_TIMER_MS, this.dueScanFrom.dueAt - DUE_HORIZON_MS - this.clock.now());
    if (delay <= 0) return;
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      this.refill();
    }, delay);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }
}

function before(a: DuePosition, b: DuePosition): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.id < b.id);
}
