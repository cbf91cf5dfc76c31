/**
 * The node's deferred delivery work, shared among its projects: a lifecycle's next pump turn, a
 * window's refill from disk, retries that fell due. Turns run in the order they were asked for, so
 * projects take turns round-robin (one that wants more asks again, behind the others), and the
 * turns run in one turn of the event loop are bounded in time, so that requests are served between
 * them. Fresh events are not deferred: an ingest's deliveries start in the request's own callback.
 *
 * The deferred work also waits while the disk writer is behind: with MAX_COMMITS_BEHIND delivery
 * commits issued and not yet settled, no turn runs until half of them have. LMDB commits in the
 * order writes were issued, so an ingest's commit waits behind every write queued before it: a
 * drain issuing 20,000 writes a second made other projects' events wait half a second to commit.
 *
 * The deferred work yields to the rest: while requests keep the loop busy, it gets at most a
 * quarter of the loop's time (a third of the time spent on other work since its last run), and at
 * least MIN_LOOP_SLICE_MS a loop, so that a backlog always moves; with nothing else to do it runs
 * on, a slice at a time.
 *
 * That is the fairness of issue 35: a project draining a large backlog (failing it unsent under an
 * open circuit, or sending it to a recovered endpoint) gets a slice of the loop at a time, and every
 * other project's requests and fresh deliveries run between its slices. Before, a refill of 1,000
 * due deliveries failed them all in one callback, and a timer firing for many started them all.
 */

/** One turn's share of the event loop: the work checks `spent` and asks for another turn after it. */
export const TURN_SLICE_MS = 2;
/** The most all turns run in one turn of the event loop take; then I/O is served. */
export const LOOP_SLICE_MS = 6;
/** The least they take, however busy the loop is with other work. */
export const MIN_LOOP_SLICE_MS = 1;
/** Deferred work's share of a busy loop, as a fraction of the time other work took. */
const SHARE_OF_OTHER_WORK = 1 / 3;
/** Delivery commits not yet settled, node-wide, at which deferred work waits for the disk. */
export const MAX_COMMITS_BEHIND = 64;

export class WorkTurns {
  private waiting: Array<() => void> = [];
  private scheduled = false;
  /** When the turn running now has used its slice; Infinity outside a turn. */
  private turnEndsAt = Infinity;
  /** When the last run of turns ended: the time since was other work's (or idle). */
  private lastRunEndedAt = -Infinity;
  /** Delivery commits issued and not yet settled (the disk writer's queue). */
  private commitsBehind = 0;
  /** Turns wait for the disk: they run again once commits are down to half the bound. */
  private waitingForDisk = false;

  constructor(
    /** A turn that threw: reported, and the other turns run. */
    private readonly onError: (error: unknown) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly later: (run: () => void) => void = setImmediate,
  ) {}

  /** Turns asked for and not yet run. */
  get pending(): number {
    return this.waiting.length;
  }

  /** Runs `turn` once, in a later turn of the event loop, after the turns asked for before it. */
  request(turn: () => void): void {
    this.waiting.push(turn);
    this.schedule();
  }

  /**
   * Resolves in a turn, after the turns asked for before it: for work that runs in slices of its
   * own after an await (a partition's restore, whose slices are LMDB transactions).
   */
  nextTurn(): Promise<void> {
    return new Promise((resolve) => this.request(resolve));
  }

  /**
   * Whether the turn running now has used its slice: its work should stop, ask for another turn
   * and return. False outside a turn (work a request or a timer started is bounded by its caller).
   */
  spent(): boolean {
    return this.turnEndsAt !== Infinity && (this.commitsBehind >= MAX_COMMITS_BEHIND || this.now() >= this.turnEndsAt);
  }

  /** A delivery commit was issued (by any project, deferred or not). */
  commitIssued(): void {
    this.commitsBehind++;
  }

  /** A delivery commit settled, committed or failed. */
  commitSettled(): void {
    this.commitsBehind--;
    if (this.waitingForDisk && this.commitsBehind <= MAX_COMMITS_BEHIND / 2) {
      this.waitingForDisk = false;
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.waitingForDisk) return;
    this.scheduled = true;
    this.later(this.runTurns);
  }

  private readonly runTurns = (): void => {
    this.scheduled = false;
    if (this.commitsBehind >= MAX_COMMITS_BEHIND) {
      this.waitingForDisk = true;
      return;
    }
    const turns = this.waiting;
    this.waiting = [];
    const runStartedAt = this.now();
    const otherWorkMs = runStartedAt - this.lastRunEndedAt;
    const loopEndsAt = runStartedAt + Math.min(LOOP_SLICE_MS, Math.max(MIN_LOOP_SLICE_MS, otherWorkMs * SHARE_OF_OTHER_WORK));
    let next = 0;
    while (next < turns.length) {
      const startedAt = this.now();
      // At least one turn per loop, however long the last one took.
      if (next > 0 && startedAt >= loopEndsAt) break;
      this.turnEndsAt = Math.min(startedAt + TURN_SLICE_MS, Math.max(loopEndsAt, startedAt + MIN_LOOP_SLICE_MS / 4));
      try {
        turns[next++]!();
      } catch (error) {
        this.onError(error);
      } finally {
        this.turnEndsAt = Infinity;
      }
    }
    this.lastRunEndedAt = this.now();
    // Those left go first in the next loop, ahead of the turns asked for during this one.
    if (next < turns.length) this.waiting = turns.slice(next).concat(this.waiting);
    if (this.waiting.length > 0) this.schedule();
  };
}
