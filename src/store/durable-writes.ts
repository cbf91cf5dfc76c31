import type { RootDatabase } from 'lmdb';
import { FixedDelayTimers } from '../fixed-delay-timers.js';
import type { TimerEntry } from '../fixed-delay-timers.js';
import { observed } from './lmdb-commit-failures.js';
import { WriteGroup } from './write-group.js';

/**
 * How long a commit's flush may take before durability is confirmed by an explicit sync instead:
 * lmdb-js never settles the flush promise of a batch whose write failed, so after a failed commit
 * an acknowledged write (or a close) would otherwise wait forever.
 */
const FLUSH_CONFIRM_MS = 1000;
/**
 * How long a delivery's commit may stay unsettled before it is reported as failed. lmdb-js settles
 * no write of a batch whose commit ends in an error status of its write thread (it only prints it,
 * e.g. EIO from a full tmpfs), so a writer awaiting one would wait forever. Writing the steps again
 * is safe: a step written again lands on the same log keys (`applyDeliveryChanges`).
 */
const DELIVERY_COMMIT_CONFIRM_MS = 2000;

/**
 * Waits on LMDB commits that are bounded in time: writes acknowledged only once on disk (ingests),
 * and delivery commits reported as failed when lmdb-js leaves them unsettled. The bounds on a flush
 * and on a delivery commit are each one timer for all.
 */
export class DurableWrites {
  private readonly flushConfirm = new FixedDelayTimers(FLUSH_CONFIRM_MS);
  private readonly deliveryCommitConfirm = new FixedDelayTimers(DELIVERY_COMMIT_CONFIRM_MS);
  /** Set while `inOneBatch` runs: the writes it makes are issued in one batch. */
  private together: WriteGroup<{ durable(): Promise<void> }> | null = null;

  constructor(private readonly root: RootDatabase) {}

  /**
   * Issues `puts` now (in the batch of the `inOneBatch` call running, if any) and resolves once
   * they are committed and on disk.
   */
  async write(puts: () => void): Promise<void> {
    if (this.together) await (await this.together.add(puts)).durable();
    else await this.issueDurably(puts)();
  }

  /**
   * Runs `writeAll`, whose `write` calls (made before it returns) are issued in one LMDB batch and
   * share one commit wait, flush and timer.
   */
  inOneBatch<T>(writeAll: () => T): T {
    const group = new WriteGroup((puts) => ({ durable: this.issueDurably(puts) }));
    this.together = group;
    try {
      return writeAll();
    } finally {
      this.together = null;
      group.close();
    }
  }

  /** Resolves once `flushed` (by default: every commit so far) is on disk, or failing that in time, an explicit sync. */
  async durable(flushed: Promise<boolean> = this.flushOfCurrentBatch()): Promise<void> {
    let timer!: TimerEntry;
    const late = new Promise<false>((resolve) => (timer = this.flushConfirm.add(() => resolve(false))));
    try {
      if (await Promise.race([flushed, late])) return;
    } finally {
      this.flushConfirm.cancel(timer);
    }
    const root = this.root as unknown as { sync(callback: (error?: Error | null) => void): void };
    await new Promise<void>((resolve, reject) => root.sync((error) => (error ? reject(error) : resolve())));
  }

  /**
   * Settles as the delivery commit `commit` does, or rejects once it has stayed unsettled for
   * `DELIVERY_COMMIT_CONFIRM_MS` (2 s).
   */
  async confirmedDeliveryCommit(commit: Promise<unknown>): Promise<void> {
    let timer!: TimerEntry;
    const unconfirmed = new Promise<never>((_, reject) => {
      timer = this.deliveryCommitConfirm.add(() => reject(new Error(`LMDB commit not confirmed within ${DELIVERY_COMMIT_CONFIRM_MS} ms`)));
    });
    try {
      await Promise.race([commit, unconfirmed]);
    } finally {
      this.deliveryCommitConfirm.cancel(timer);
    }
  }

  /**
   * Issues `puts` in a batch of their own; the returned wait (made once, however often it is
   * called) resolves once that batch is committed and on disk.
   */
  private issueDurably(puts: () => void): () => Promise<void> {
    // A batch, not a transaction: an async transaction's callback runs on this thread, so LMDB's
    // write thread (and every write queued behind it) waited for the event loop to come round.
    const commit = observed(this.root.batch(puts));
    // With overlappingSync a commit is visible before it is on disk; an acknowledged event must be
    // on disk. Its own batch's flush, taken now: read after the commit, `flushed` is the newest
    // batch's, which attempt commits keep joining (that wait was the p99 at 1,000/s).
    const flushed = this.flushOfCurrentBatch();
    let durable: Promise<void> | null = null;
    return () => (durable ??= commit.then(() => this.durable(flushed)));
  }

  /**
   * The flush of the batch the writes issued so far in this turn belong to. `flushed` is a thenable
   * whose `then` picks the batch when called, so it is called now, not when awaited.
   */
  private flushOfCurrentBatch(): Promise<boolean> {
    // Never rejects (it may be left unawaited when the commit fails): false sends `durable` to a sync.
    return new Promise((resolve) => void this.root.flushed.then(() => resolve(true), () => resolve(false)));
  }
}
