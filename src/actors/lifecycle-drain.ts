/**
 * What a lifecycle's drain waits for, kept apart from the deliveries' steps: no attempt in flight,
 * then no tracked store write (or its replication) unsettled. So a node closes its store, and a
 * cluster node hands a partition on, only after the changes already made are written and
 * replicated; past the deadline the lifecycle is told (`late`) so that it stops writing first.
 */
export class LifecycleDrain {
  /**
   * Store writes not yet settled. A count, not a `Set` of the promises: with thousands in flight
   * the set grew and shrank again and again, and V8 reallocates a large set's table each time (1.2%
   * of a node's CPU, mostly page faults).
   */
  private pendingWrites = 0;
  private writesSettledWaiters: Array<() => void> = [];
  private draining = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    /** The lifecycle's attempts in flight (its own set, read here, never changed). */
    private readonly attempting: ReadonlySet<unknown>,
    /** The deadline passed with writes unsettled (steps still failing to commit). */
    private readonly late: () => void,
  ) {}

  get isDraining(): boolean {
    return this.draining;
  }

  /** Counts a write until it settles, so that a drain waits for it. */
  tracked<T>(write: Promise<T>): Promise<T> {
    this.pendingWrites++;
    write.then(this.writeSettled, this.writeSettled);
    return write;
  }

  /** A tracked write settled: a drain waiting for the last one goes on. */
  private readonly writeSettled = (): void => {
    if (--this.pendingWrites === 0) for (const wake of this.writesSettledWaiters.splice(0)) wake();
  };

  /** An attempt ended: with none in flight any more, a drain waiting for that goes on. */
  wakeIfIdle(): void {
    if (this.attempting.size === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /**
   * Marks the lifecycle draining (it starts no attempt) and resolves when no attempt is in flight
   * and no tracked write is unsettled, or when the deadline passes.
   */
  drain(deadlineMs: number): Promise<void> {
    this.draining = true;
    if (this.attempting.size === 0 && this.pendingWrites === 0) return Promise.resolve();
    const idle = new Promise<void>((resolve) => {
      if (this.attempting.size === 0) resolve();
      else this.idleWaiters.push(resolve);
    });
    const settled = idle.then(() => (this.pendingWrites === 0 ? undefined : new Promise<void>((resolve) => this.writesSettledWaiters.push(resolve))));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, deadlineMs, 'late')));
    return Promise.race([settled, deadline]).then((outcome) => {
      clearTimeout(timer);
      if (outcome === 'late') this.late();
    });
  }
}
