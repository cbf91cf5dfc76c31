/**
 * The writes issued in one synchronous run of code (one task, up to its microtasks), issued to LMDB
 * together in one `batch` call from a microtask. lmdb-js commits the writes of an event-loop turn in
 * one transaction anyway; what each write paid on its own was the rest: a `batch` of its own (an
 * instruction for the write thread, and a promise), a flush promise, a confirmation timer and a
 * race. The 100 events of a batch ingest, issued in one loop, now share one of each. A microtask,
 * not `setImmediate`: the writes still reach lmdb-js in the turn they were made (a task-end group
 * measured the same CPU, one loop iteration later). A write that throws while it is issued (an
 * encoding error) fails alone.
 */
export class TurnWrites<Issued> {
  private writes: Array<() => void> = [];
  private issued: Promise<Issued> | null = null;
  private resolveIssued: ((issued: Issued) => void) | null = null;
  private rejectIssued: ((error: unknown) => void) | null = null;

  /** `issue` runs every write of the turn (`writeAll`) in one LMDB batch and returns what they share. */
  constructor(private readonly issue: (writeAll: () => void) => Issued) {}

  /** Queues `write` (its puts) for this turn's batch; resolves with what `issue` returned for it. */
  async add(write: () => void): Promise<Issued> {
    let thrown: { error: unknown } | null = null;
    this.writes.push(() => {
      try {
        write();
      } catch (error) {
        thrown = { error };
      }
    });
    if (!this.issued) {
      this.issued = new Promise((resolve, reject) => {
        this.resolveIssued = resolve;
        this.rejectIssued = reject;
      });
      queueMicrotask(() => this.issueAll());
    }
    const issued = await this.issued;
    if (thrown) throw (thrown as { error: unknown }).error;
    return issued;
  }

  private issueAll(): void {
    const writes = this.writes;
    const resolve = this.resolveIssued!;
    const reject = this.rejectIssued!;
    this.writes = [];
    this.issued = null;
    this.resolveIssued = null;
    this.rejectIssued = null;
    try {
      resolve(this.issue(() => {
        for (const write of writes) write();
      }));
    } catch (error) {
      reject(error);
    }
  }
}
