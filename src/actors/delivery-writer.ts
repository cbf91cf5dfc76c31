import type { DeliveryChange } from '../store/records.js';
import type { HooklineStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { LiveDelivery } from './live-delivery.js';
import { NO_STEPS, identityOf, toRest } from './live-delivery.js';

/** First wait before writing failed steps again, doubled on each failure up to the second bound. */
const WRITE_RETRY_MIN_MS = 50;
const WRITE_RETRY_MAX_MS = 2_000;

/**
 * Writes each delivery's steps behind its state, in order, by one writer per delivery. A step
 * whose commit fails (a full disk) stays queued and is written again, with the steps made since,
 * until it is stored: the log ends as the delivery did, without a restart, and a delivery that was
 * made is not made again for want of its record. Before, a failed commit lost its step for good:
 * on a full disk a delivery's success (its last step) never reached the log, which kept
 * `delivering` until a restart sent the event again. A commit lmdb-js never settles counts as
 * failed after a while (the store bounds it); steps written again land on the same log keys.
 *
 * One commit per attempt: the step that starts an attempt is committed with the attempt's outcome,
 * not on its own, since a restart attempts a `delivering` delivery again anyway. A cluster node
 * appends it to the changelog on its own first, once the steps before it are in (the next owner of
 * the partition, or this node restoring the partition after a restart, must see that an attempt
 * may have reached the receiver: it logs it as interrupted). Its waiter hears of that append, and
 * the attempt is sent only then. A cluster node replicates the steps as they are, never reading
 * the record back.
 */
export class DeliveryWriter {
  /**
   * One wait shared by every delivery whose steps failed to commit, so that they are written
   * again together, in one commit, not one commit per delivery. Its delay doubles while commits
   * keep failing and starts over after one succeeds.
   */
  private retry: { wait: Promise<void>; wake: () => void; timer: unknown } | null = null;
  private retryDelayMs = 0;
  /** Set when the actor stops for good (dropped, or its drain ran out of time): failed steps are left to the next start. */
  private abandoned = false;
  /** Deliveries with steps whose append to the changelog failed: their next append is the whole record. */
  private readonly unreplicated = new Set<string>();

  constructor(
    private readonly projectId: string,
    private readonly store: HooklineStore,
    private readonly clock: Clock,
    /** Called when a writer has nothing left to write (the delivery may leave memory then). */
    private readonly onWritten: (delivery: LiveDelivery) => void,
    /** Told of each commit issued and settled: deferred work waits while the disk is behind (work-turns.ts). */
    private readonly commits: { commitIssued(): void; commitSettled(): void },
  ) {}

  /** Starts the delivery's writer unless one runs; the promise settles when it stops. */
  start(delivery: LiveDelivery): Promise<void> | null {
    return delivery.writing ? null : this.writeBehind(delivery);
  }

  /** How many of the unwritten steps go into the next commit: all but a held attempt start. */
  private writable(delivery: LiveDelivery): number {
    return delivery.unwritten.length - (delivery.status === 'delivering' ? 1 : 0);
  }

  /** Cluster: whether the one unwritten step left is an attempt start not yet in the changelog. */
  private holdsStartToAppend(delivery: LiveDelivery): boolean {
    const step = delivery.unwritten[0];
    return this.store.replicator !== null && delivery.status === 'delivering' && delivery.unwritten.length === 1 && step !== undefined && step.appended !== true;
  }

  /**
   * Cluster: appends the held attempt start (the one unwritten step left, `holdsStartToAppend`) to
   * the changelog and tells its waiter, which sends the attempt. A failed append is told too (the
   * attempt is not sent), and the next append of the delivery is its whole record.
   */
  private async appendHeldStart(delivery: LiveDelivery): Promise<void> {
    const step = delivery.unwritten[0]!;
    step.appended = true;
    // After a failed append, the whole record as LMDB holds it (without the start) goes with it.
    const record = this.unreplicated.has(delivery.id) ? this.store.getDelivery(this.projectId, delivery.id) : undefined;
    try {
      await Promise.all([record ? this.store.replicateDelivery(this.projectId, record) : null, this.store.replicateSteps(this.projectId, delivery.id, [step.change])]);
      this.unreplicated.delete(delivery.id);
      step.waiter?.resolve();
    } catch (error) {
      this.unreplicated.add(delivery.id);
      step.waiter?.reject(error);
    }
    step.waiter = null;
  }

  /** Appends committed steps to the changelog: as they are, or the whole record after a failed append. */
  private async replicate(delivery: LiveDelivery, changes: readonly DeliveryChange[]): Promise<void> {
    if (!this.store.replicator || changes.length === 0) return;
    if (!this.unreplicated.has(delivery.id)) {
      try {
        await this.store.replicateSteps(this.projectId, delivery.id, changes);
      } catch (error) {
        this.unreplicated.add(delivery.id);
        throw error;
      }
      return;
    }
    await this.store.replicateDelivery(this.projectId, this.store.getDelivery(this.projectId, delivery.id)!);
    this.unreplicated.delete(delivery.id);
  }

  private async writeBehind(delivery: LiveDelivery): Promise<void> {
    delivery.writing = true;
    /** Whether the steps at the front failed to commit before (their commit may have landed all the same). */
    let again = false;
    try {
      while (!this.abandoned) {
        if (this.writable(delivery) === 0) {
          // Decided and left in one turn, with no await between: a step made after this (another
          // attempt's end starting this one, in a microtask) finds no writer running, and starts
          // one. Awaited, an append with nothing to do let such a start in, unwritten and unsent
          // for good: its delivery stayed `delivering` (npm run nemesis, seeds 1 and 3).
          if (!this.holdsStartToAppend(delivery)) break;
          // Steps made while the start was appended (its attempt not sent: interrupted) are written next.
          await this.appendHeldStart(delivery);
          continue;
        }
        // Left in the list until committed: a read shows them meanwhile (it would otherwise see a
        // step while it waits, not while its commit runs, and again once it is stored).
        const steps = delivery.unwritten.slice(0, this.writable(delivery));
        const changes = steps.map((step) => step.change);
        this.commits.commitIssued();
        try {
          await this.store.applyDeliveryChanges(this.projectId, identityOf(this.store, this.projectId, delivery), delivery.storedStatus, changes, again, delivery.storedDueAt);
        } catch (error) {
          this.commits.commitSettled();
          for (const step of steps) step.waiter?.reject(error);
          for (const step of steps) step.waiter = null;
          again = true;
          // Still in front of the steps made since: the next commit writes them all, in order.
          await this.waitToWriteAgain();
          continue;
        }
        this.commits.commitSettled();
        this.retryDelayMs = 0;
        again = false;
        delivery.unwritten.splice(0, steps.length);
        // Back to the shared empty list: an emptied array keeps its backing store, for every retrying delivery.
        if (delivery.unwritten.length === 0) delivery.unwritten = NO_STEPS;
        const last = changes.at(-1)!;
        delivery.storedStatus = last.status;
        delivery.storedDueAt = last.status === 'retrying' ? last.nextAttemptAt : null;
        try {
          // A start appended on its own is not appended again (a restore takes the steps in order).
          await this.replicate(delivery, steps[0]!.appended ? changes.slice(1) : changes);
        } catch (error) {
          // Committed here, so not written again; the waiters learn that replication failed.
          for (const step of steps) step.waiter?.reject(error);
          continue;
        }
        for (const step of steps) step.waiter?.resolve();
      }
    } finally {
      delivery.writing = false;
    }
    toRest(delivery);
    this.onWritten(delivery);
  }

  /** Resolves when failed steps should be written again (or at once when writes are abandoned). */
  private waitToWriteAgain(): Promise<void> {
    if (this.abandoned) return Promise.resolve();
    if (!this.retry) {
      this.retryDelayMs = Math.min(WRITE_RETRY_MAX_MS, Math.max(WRITE_RETRY_MIN_MS, this.retryDelayMs * 2));
      let wake!: () => void;
      const wait = new Promise<void>((resolve) => (wake = resolve));
      const timer = this.clock.setTimer(() => this.wake(), this.retryDelayMs);
      this.retry = { wait, wake, timer };
    }
    return this.retry.wait;
  }

  private wake(): void {
    const retry = this.retry;
    this.retry = null;
    if (!retry) return;
    this.clock.clearTimer(retry.timer);
    retry.wake();
  }

  /** Steps still failing to commit are left as they are in LMDB: the next start resumes from there. */
  abandon(): void {
    this.abandoned = true;
    this.wake();
  }
}
