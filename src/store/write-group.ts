/**
 * Writes made together (the events of one batch ingest), issued to LMDB in one `batch` call when
 * the group is closed. lmdb-js commits the writes of an event-loop turn in one transaction anyway;
 * what each write paid on its own was the rest: a `batch` of its own (an instruction for the write
 * thread, and a promise), a flush promise, a confirmation timer and a race. A write that throws
 * while it is issued (an encoding error) fails alone.
 */
export class WriteGroup<Issued> {
  private readonly writes: Array<() => void> = [];
  private readonly issued: Promise<Issued>;
  private resolveIssued!: (issued: Issued) => void;
  private rejectIssued!: (error: unknown) => void;

  /** `issue` runs every write of the group (`writeAll`) in one LMDB batch and returns what they share. */
  constructor(private readonly issue: (writeAll: () => void) => Issued) {
    this.issued = new Promise((resolve, reject) => {
      this.resolveIssued = resolve;
      this.rejectIssued = reject;
    });
  }

  /** Queues `write` (its puts); resolves with what `issue` returned once the group is closed. */
  async add(write: () => void): Promise<Issued> {
    let thrown: { error: unknown } | null = null;
    this.writes.push(() => {
      try {
        write();
      } catch (error) {
        thrown = { error };
      }
    });
    const issued = await this.issued;
    if (thrown) throw (thrown as { error: unknown }).error;
    return issued;
  }

  /** Issues every write queued so far, in the order queued; call once. */
  close(): void {
    if (this.writes.length === 0) return;
    try {
      this.resolveIssued(this.issue(() => {
        for (const write of this.writes) write();
      }));
    } catch (error) {
      this.rejectIssued(error);
    }
  }
}
