import type { Database } from 'lmdb';
import type { DeliveryTables } from './delivery-tables.js';
import { observed } from './lmdb-commit-failures.js';
import { withChanges } from './delivery-model.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord, EventRecord, TransitionRecord, WebhookRecord } from './records.js';

/** Steps of one delivery committed together, in order (a changelog entry). */
export interface DeliverySteps {
  id: string;
  changes: readonly DeliveryChange[];
}

/** A record arriving from another node's changelog, stored as it is and not replicated again. */
export type RestoredRecord =
  | { kind: 'delivery'; record: DeliveryRecord }
  | { kind: 'event'; record: EventRecord }
  | { kind: 'webhook'; record: WebhookRecord };

/** An entry of a partition's changelog: a record's version, or a delivery's steps. */
export type ChangelogEntry = (RestoredRecord | { kind: 'steps'; record: DeliverySteps }) & { projectId: string };

/** The tables a restore writes (a `HooklineStore`'s). */
export interface RestoreTables {
  readonly root: { transaction<T>(action: () => T): Promise<T> };
  readonly webhooks: Database<WebhookRecord, string>;
  readonly events: Database<EventRecord, [string, string]>;
  readonly deliveries: Database<DeliveryHead, [string, string]>;
  readonly deliveryTables: DeliveryTables;
  /**
   * Deliveries a restore has written, of projects this node held deliveries of before it, with this
   * node's own copy where it was longer than the changelog's first version (else null); until the
   * restore ends (`ChangelogRestore.finish`).
   */
  readonly restoreStash: Database<DeliveryRecord | null, StashKey>;
}

/** A set-aside copy's key: the partition restored, then the delivery's. */
export type StashKey = [partition: number, projectId: string, deliveryId: string];

/** Copies `ChangelogRestore.finish` reads from the stash at a time. */
const STASH_PAGE = 5_000;

/**
 * How a restore shares the node with serving (the engine's `WorkTurns`): it writes in slices, each
 * in a turn of the node's deferred work and counted as a delivery commit, so that it waits while
 * the disk writer is behind and other projects' requests and commits run between its slices.
 */
export interface RestorePace {
  /** Resolves in a turn of the node's deferred work, after the turns asked for before. */
  nextTurn(): Promise<void>;
  commitIssued(): void;
  commitSettled(): void;
}

/**
 * Main-thread time one paced transaction of a restore may take. Each delivery is about 9 LMDB puts
 * (issue 35): a chunk of 5,000 entries in one transaction held the event loop for hundreds of
 * milliseconds, and other projects' events on the node were answered seconds late during a takeover
 * of 200,000 waiting deliveries (bench:takeover).
 */
const PACED_SLICE_MS = 4;
/** Paced transactions issued and not yet committed (`inSlices`). */
const SLICES_IN_FLIGHT = 2;

/**
 * Stores a record from the changelog over whatever this node had, unless this node's copy is newer:
 * a node that owned the partition before may hold a later version whose append never reached the
 * changelog, and a restore must never move a record back in time. An event's delivery ids only ever
 * grow; a webhook carries `updatedAt`. A delivery's copy here is newer when it holds the changelog
 * version's transitions and more (`holdsTransitions`); a copy that differs (its attempts made by a
 * node fenced out, while another owner appended its own) gives way to the changelog's. Issued inside
 * the caller's transaction. Answers the event version replaced (an event's), else undefined; false
 * when the local copy was kept.
 */
export function putRestoredRecord(tables: RestoreTables, projectId: string, restored: RestoredRecord): EventRecord | undefined | false {
  if (restored.kind === 'webhook') {
    const previous = tables.webhooks.get(projectId);
    if (previous && previous.updatedAt > restored.record.updatedAt) return false;
    tables.webhooks.put(projectId, restored.record);
  } else if (restored.kind === 'event') {
    const previous = tables.events.get([projectId, restored.record.id]);
    if (previous && previous.deliveryIds.length > restored.record.deliveryIds.length) return false;
    tables.events.put([projectId, restored.record.id], restored.record);
    return previous;
  } else {
    const previous = tables.deliveries.get([projectId, restored.record.id]);
    const incoming = restored.record.transitions;
    if (previous && previous.transitionCount > incoming.length && holdsTransitions(tables.deliveryTables.assemble(projectId, previous).transitions, 0, incoming)) return false;
    // Removed whole, log entries too: the record's logs may be shorter than those the previous
    // version's steps left, and a read assembles whatever lies under the delivery's id.
    if (previous) tables.deliveryTables.remove(projectId, previous);
    tables.deliveryTables.putWholeRecord(projectId, restored.record);
  }
  return undefined;
}

/**
 * A partition's changelog laid into LMDB as it is read, in append order (the snapshot, then the
 * batches after it), a chunk per transaction: LMDB holds the latest version of each record, so a
 * takeover never holds the partition in memory (an in-memory merge of 200,000 deliveries left the
 * node at 1.7 GB RssAnon, bench:takeover). The outcome is the in-memory merge's
 * (`PartitionChangelog.restore`): each record's latest version, a delivery's steps applied in
 * transition order from its record's, steps after a gap left out, the deliveries of ingests that
 * were taken back left out (see `withoutTakenBack` there), and this node's own copy of a delivery
 * kept where it holds the changelog's final version and more (`putRestoredRecord`). That last is
 * known only at the end: a delivery's first entries hold fewer transitions than its last, so a
 * longer copy of this node's is set aside as it is replaced, and weighed by `finish`.
 */
export class ChangelogRestore {
  /** Steps not applicable yet (no record, or a gap before them), by `projectId.deliveryId`: rare. */
  private readonly parked = new Map<string, DeliveryChange[]>();
  /** `heldHere`'s answers, by project. */
  private readonly projectsHeldHere = new Map<string, boolean>();
  /** The event applied last: a delivery comes right after its event, in the same message. */
  private lastEvent: { projectId: string; record: EventRecord } | null = null;

  /** The chunks handed to `apply`, laid in one after another: a later chunk's slices wait for the earlier's. */
  private applied: Promise<void> = Promise.resolve();

  constructor(
    private readonly tables: RestoreTables,
    private readonly partition: number,
    /** Without one, each chunk is one transaction, taken at once. */
    private readonly pace?: RestorePace,
    /** A paced transaction's share of the event loop (at least one entry each). */
    private readonly sliceMs = PACED_SLICE_MS,
  ) {}

  /**
   * Lays `entries` (in append order) into LMDB after the chunks handed before them; paced, in
   * slices. Once one chunk fails, every later one fails with it: a chunk laid over a missing one
   * would leave records older than the changelog holds.
   */
  apply(entries: readonly ChangelogEntry[]): Promise<void> {
    this.applied = this.applied.then(() => this.inSlices(entries, (entry) => this.applyOne(entry)));
    return this.applied;
  }

  /**
   * Runs `each` over `items` in transactions: one when not paced, else as many as it takes to keep
   * each within `sliceMs` of the event loop, each issued in a turn of the node's deferred work.
   * LMDB runs transactions in the order they were issued, each seeing what the ones before it
   * wrote, so they share one cursor: SLICES_IN_FLIGHT are issued at a time, for the main thread to
   * fill the next while LMDB's writer commits the last (one at a time, the restore took half as
   * long again). One issued after the cursor reached the end does nothing.
   */
  private async inSlices<T>(items: readonly T[], each: (item: T) => void): Promise<void> {
    const pace = this.pace;
    if (!pace) {
      await observed(this.tables.root.transaction(() => items.forEach((item) => each(item))));
      return;
    }
    let cursor = 0;
    const inFlight: Array<Promise<void>> = [];
    try {
      while (cursor < items.length) {
        if (inFlight.length >= SLICES_IN_FLIGHT) {
          await inFlight.shift();
          continue;
        }
        await pace.nextTurn();
        pace.commitIssued();
        const slice = observed(this.tables.root.transaction(() => {
          const endsAt = performance.now() + this.sliceMs;
          while (cursor < items.length) {
            each(items[cursor++]!);
            if (performance.now() >= endsAt) break;
          }
        })).finally(() => pace.commitSettled());
        inFlight.push(slice);
      }
      await Promise.all(inFlight);
    } catch (error) {
      // The slices after a failed one are not waited for; their failures are this one's.
      for (const slice of inFlight) slice.catch(() => {});
      throw error;
    }
  }

  private applyOne(entry: ChangelogEntry): void {
    const { projectId } = entry;
    if (entry.kind === 'steps') return this.applySteps(projectId, entry.record.id, entry.record.changes);
    if (entry.kind === 'delivery') {
      if (this.takenBack(projectId, entry.record)) return;
      this.putDelivery(projectId, entry.record);
      if (this.parked.has(`${projectId}.${entry.record.id}`)) this.applySteps(projectId, entry.record.id, []);
      return;
    }
    const replaced = putRestoredRecord(this.tables, projectId, entry);
    if (entry.kind === 'event' && replaced !== false) {
      this.lastEvent = { projectId, record: entry.record };
      // Deliveries the replaced version listed and this one does not were taken back (and the
      // event made anew): restored, one would be sent again under another `webhook-id`.
      for (const id of replaced?.deliveryIds ?? []) {
        if (entry.record.deliveryIds.includes(id)) continue;
        const head = this.tables.deliveries.get([projectId, id]);
        if (head) this.tables.deliveryTables.remove(projectId, head);
      }
    }
  }

  /** Whether the delivery's event, as stored, does not list it (a delivery whose event is not stored is kept). */
  private takenBack(projectId: string, delivery: DeliveryRecord): boolean {
    const last = this.lastEvent;
    const event = last && last.projectId === projectId && last.record.id === delivery.eventId ? last.record : this.tables.events.get([projectId, delivery.eventId]);
    return event !== undefined && !event.deliveryIds.includes(delivery.id);
  }

  /** Applies what follows on from the stored head's transitions; parks what lies past a gap, or all without a head. */
  private applySteps(projectId: string, id: string, changes: readonly DeliveryChange[]): void {
    const key = `${projectId}.${id}`;
    const steps = [...(this.parked.get(key) ?? []), ...changes].sort((a, b) => a.transitionIndex - b.transitionIndex);
    this.parked.delete(key);
    const head = this.tables.deliveries.get([projectId, id]);
    if (!head) {
      this.parked.set(key, steps);
      return;
    }
    let next = head.transitionCount;
    const contiguous: DeliveryChange[] = [];
    for (const [index, step] of steps.entries()) {
      if (step.transitionIndex < next) continue;
      if (step.transitionIndex > next) {
        this.parked.set(key, steps.slice(index));
        break;
      }
      contiguous.push(step);
      next += step.transitions.length;
    }
    if (contiguous.length > 0) this.tables.deliveryTables.putSteps(projectId, head, head.status, contiguous, false, head.status === 'retrying' ? head.nextAttemptAt : null);
  }

  /**
   * A delivery's version from the changelog. Over a version this restore wrote, the longer stays: a
   * snapshot is read from the owner's LMDB while batches go on being appended, so it may hold newer
   * versions than the batches after the last one it covers. This node's own copy, from before the
   * restore, gives way to the changelog's first version; if it was longer, it is set aside for
   * `finish` to weigh against the changelog's final version. Which is which is told apart only for
   * projects this node held deliveries of (`heldHere`): a takeover by a node new to the partition
   * writes nothing more.
   */
  private putDelivery(projectId: string, record: DeliveryRecord): void {
    const previous = this.tables.deliveries.get([projectId, record.id]);
    if (this.heldHere(projectId)) {
      const stashKey: StashKey = [this.partition, projectId, record.id];
      if (!this.tables.restoreStash.doesExist(stashKey)) {
        const ownIsLonger = previous !== undefined && previous.transitionCount > record.transitions.length;
        this.tables.restoreStash.put(stashKey, ownIsLonger ? this.tables.deliveryTables.assemble(projectId, previous) : null);
        return this.replaceDelivery(projectId, previous, record);
      }
    }
    if (previous && previous.transitionCount > record.transitions.length) return;
    this.replaceDelivery(projectId, previous, record);
  }

  private replaceDelivery(projectId: string, previous: DeliveryHead | undefined, record: DeliveryRecord): void {
    // Removed whole, log entries too: the record's logs may be shorter than those the previous
    // version's steps left, and a read assembles whatever lies under the delivery's id.
    if (previous) this.tables.deliveryTables.remove(projectId, previous);
    this.tables.deliveryTables.putWholeRecord(projectId, record);
  }

  /**
   * Whether LMDB held deliveries of the project when the restore met it first: asked before the
   * restore writes any of the project's, and remembered.
   */
  private heldHere(projectId: string): boolean {
    let held = this.projectsHeldHere.get(projectId);
    if (held === undefined) {
      held = this.tables.deliveries.getKeysCount({ start: [projectId, ''], end: [projectId, '\uffff'], limit: 1 }) > 0;
      this.projectsHeldHere.set(projectId, held);
    }
    return held;
  }

  /**
   * Once every chunk is applied: puts back each copy `putDelivery` set aside that holds the
   * changelog's final version and more (attempts this node made whose appends never reached the
   * changelog); one that differs (made while this node was fenced out, another owner appending
   * meanwhile) gives way to the changelog's. Answers how many were put back.
   */
  async finish(): Promise<number> {
    await this.applied;
    this.projectsHeldHere.clear();
    let putBack = 0;
    const range = { start: [this.partition], end: [this.partition + 1], limit: STASH_PAGE };
    for (;;) {
      const stashed = [...this.tables.restoreStash.getRange(range)];
      if (stashed.length === 0) return putBack;
      await this.inSlices(stashed, ({ key, value: own }) => {
        const [, projectId, id] = key;
        this.tables.restoreStash.remove(key);
        if (own === null) return;
        const current = this.tables.deliveries.get([projectId, id]);
        if (!current || own.transitions.length <= current.transitionCount) return;
        if (!holdsTransitions(own.transitions, 0, this.tables.deliveryTables.assemble(projectId, current).transitions)) return;
        this.tables.deliveryTables.remove(projectId, current);
        this.tables.deliveryTables.putWholeRecord(projectId, own);
        putBack++;
      });
    }
  }
}

/** Whether `held` has `incoming`'s transitions, the same ones, from index `from` on. */
function holdsTransitions(held: readonly TransitionRecord[], from: number, incoming: readonly TransitionRecord[]): boolean {
  if (from + incoming.length > held.length) return false;
  return incoming.every((transition, offset) => {
    const mine = held[from + offset]!;
    return mine.at === transition.at && mine.to === transition.to && mine.event === transition.event && mine.from === transition.from;
  });
}
