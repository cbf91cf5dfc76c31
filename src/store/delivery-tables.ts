import type { Database, RootDatabase } from 'lmdb';
import type { DeliveryStatus } from '../machines/index.js';
import type { DeliveryIdentity } from './delivery-model.js';
import { assembleRecord, headAfter, headOf, isWholeRecord, scheduleOf } from './delivery-model.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord, DeliverySchedule } from './records.js';
import { openTable } from './tables.js';

type HeadKey = [projectId: string, deliveryId: string];
type StatusKey = [projectId: string, status: DeliveryStatus, deliveryId: string];
/**
 * A retrying delivery's key in the due index: when its next attempt is due. Only `retrying`
 * deliveries are indexed by time: a `pending` one is due at (or just after) its creation or its new
 * round, so the status index finds those in id order, and a new delivery that succeeds at its first
 * attempt costs no index entry at all.
 */
export type DueKey = [projectId: string, dueAt: number, deliveryId: string];
/** Where a read of the due index starts: the entry of `id` due at `dueAt`, or the first after it. */
export interface DuePosition {
  dueAt: number;
  id: string;
}
/** A waiting delivery as a window refill reads it: no head or log, the status index's schedule. */
export interface WaitingEntry {
  id: string;
  status: DeliveryStatus;
  schedule: DeliverySchedule;
}
/**
 * A log entry's key: the delivery first, not the project. Delivery ids sort by creation time, so a
 * commit's new entries land together at the end of the table whatever their projects. Keyed by
 * project first, a commit with 64 projects' writes touched a leaf page per project: these keys
 * write 29% fewer bytes and spend 8-16 µs less CPU per delivery (`npm run bench:lmdb-layout`,
 * BENCHMARKS.md).
 */
type LogKey = [deliveryId: string, index: number];
/** A log entry's key in stores written by model 2, which may still hold such entries. */
type ProjectLogKey = [projectId: string, deliveryId: string, index: number];

/**
 * Version of the delivery write model in `meta`; absent in stores written before it (whole
 * records). Model 2 keyed the logs by project first. A store that was at it stays at 2: entries
 * written then keep their keys, and reads look for them too.
 */
const DELIVERY_MODEL_KEY = 'delivery-model';
/** Set once the due index holds every retrying delivery (a store written before it had none). */
const DUE_INDEX_KEY = 'due-index';
const DELIVERY_MODEL = 3;
const PROJECT_LOG_KEYS_MODEL = 2;
/** Whole records converted per commit by the conversion at open. */
const CONVERSION_BATCH = 10_000;

/** Index keys a gradual count walks in one turn of the event loop (about 20 ms here). */
const COUNT_TURN = 50_000;

/**
 * The LMDB tables of deliveries: heads (`deliveries`), the status index whose values are the
 * schedules a restart resumes from (`deliveries-by-status`), and the transitions and attempts under
 * `[deliveryId, index]` (`delivery-transitions`, `delivery-attempts`). The writes here
 * are issued inside the caller's commit (`HooklineStore` owns commits, durability and replication);
 * none reads what it replaces.
 */
export class DeliveryTables {
  readonly heads: Database<DeliveryHead, HeadKey>;
  readonly byStatus: Database<DeliverySchedule, StatusKey>;
  /** Retrying deliveries by due time (`DueKey`); a value of `true` carries nothing. */
  readonly due: Database<true, DueKey>;
  private readonly transitions: Database<DeliveryRecord['transitions'][number], LogKey | ProjectLogKey>;
  private readonly attempts: Database<DeliveryRecord['attemptLog'][number], LogKey | ProjectLogKey>;
  private readonly meta: Database<number, string>;
  /** Whether log entries may lie under model 2's keys (the store was written by it). */
  private projectLogKeys = false;

  constructor(private readonly root: RootDatabase) {
    this.heads = openTable(root, 'deliveries');
    this.byStatus = openTable(root, 'deliveries-by-status');
    this.due = openTable(root, 'deliveries-due');
    this.transitions = openTable(root, 'delivery-transitions');
    this.attempts = openTable(root, 'delivery-attempts');
    this.meta = openTable(root, 'meta');
  }

  /**
   * Converts the whole delivery records of a store written by the earliest model into heads and log
   * entries, once (the model's version is kept in `meta`), in commits of 10,000. A store opened
   * halfway through a conversion that was cut off converts the rest: both forms are told apart.
   * Model 2's log entries are not converted (4 or so per delivery, millions in a large store, at
   * every first start after an upgrade): reads find them under their keys.
   */
  convertWholeRecords(): void {
    const model = this.meta.get(DELIVERY_MODEL_KEY);
    if (model === DELIVERY_MODEL || model === PROJECT_LOG_KEYS_MODEL) {
      this.projectLogKeys = model === PROJECT_LOG_KEYS_MODEL;
      this.buildDueIndex();
      return;
    }
    // A store without a model has whole records, or log entries of model 2 left by a conversion
    // that was cut off, or nothing yet.
    this.projectLogKeys = this.transitions.getKeysCount({ limit: 1 }) > 0;
    const table = this.heads as unknown as Database<DeliveryHead | DeliveryRecord, HeadKey>;
    let batch: Array<{ projectId: string; record: DeliveryRecord }> = [];
    const convert = () => {
      this.root.transactionSync(() => {
        for (const { projectId, record } of batch) this.putWholeRecord(projectId, record);
      });
      batch = [];
    };
    for (const { key, value } of table.getRange()) {
      if (!isWholeRecord(value)) continue;
      batch.push({ projectId: key[0], record: value });
      if (batch.length === CONVERSION_BATCH) convert();
    }
    if (batch.length > 0) convert();
    // A block, not an expression: a callback returning the put's promise keeps the transaction open until it settles.
    this.root.transactionSync(() => {
      this.meta.put(DELIVERY_MODEL_KEY, this.projectLogKeys ? PROJECT_LOG_KEYS_MODEL : DELIVERY_MODEL);
    });
    this.buildDueIndex();
  }

  /**
   * Indexes by due time every retrying delivery of a store written before the due index, once, from
   * the status index (whose values carry the due time), in commits of 10,000. Cut off halfway, it
   * is done again at the next open: a put is idempotent.
   */
  private buildDueIndex(): void {
    if (this.meta.get(DUE_INDEX_KEY) === 1) return;
    let batch: DueKey[] = [];
    const commit = () => {
      this.root.transactionSync(() => {
        for (const key of batch) this.due.put(key, true);
      });
      batch = [];
    };
    for (const { key, value } of this.byStatus.getRange()) {
      if (key[1] !== 'retrying' || value[0] === null) continue;
      batch.push([key[0], value[0], key[2]]);
      if (batch.length === CONVERSION_BATCH) commit();
    }
    if (batch.length > 0) commit();
    this.root.transactionSync(() => {
      this.meta.put(DUE_INDEX_KEY, 1);
    });
  }

  /** The delivery with its attempt log and transitions. */
  get(projectId: string, deliveryId: string): DeliveryRecord | undefined {
    const head = this.heads.get([projectId, deliveryId]);
    return head ? this.assemble(projectId, head) : undefined;
  }

  assemble(projectId: string, head: DeliveryHead): DeliveryRecord {
    return assembleRecord(head, this.logOf(this.transitions, projectId, head.id, head.transitionCount), this.logOf(this.attempts, projectId, head.id, head.attemptCount));
  }

  /** A delivery's entries in one log, in index order: `count` of them, unless some are missing. */
  private logOf<Entry>(table: Database<Entry, LogKey | ProjectLogKey>, projectId: string, deliveryId: string, count: number): Entry[] {
    const entries = [...table.getRange({ start: [deliveryId, 0], end: [deliveryId, Number.MAX_SAFE_INTEGER] })];
    if (!this.projectLogKeys || entries.length >= count) return entries.map(({ value }) => value);
    // Written (in part, if its steps went on after an upgrade) by model 2.
    const byIndex: Entry[] = [];
    for (const { key, value } of table.getRange({ start: [projectId, deliveryId, 0], end: [projectId, deliveryId, Number.MAX_SAFE_INTEGER] })) byIndex[(key as ProjectLogKey)[2]] = value;
    for (const { key, value } of entries) byIndex[(key as LogKey)[1]] = value;
    return byIndex.filter((entry) => entry !== undefined);
  }

  /** A whole record as head and log entries (a new delivery, a restored or converted one). */
  putWholeRecord(projectId: string, record: DeliveryRecord): void {
    const head = headOf(record);
    this.heads.put([projectId, record.id], head);
    this.byStatus.put([projectId, record.status, record.id], scheduleOf(head));
    if (head.status === 'retrying' && head.nextAttemptAt !== null) this.due.put([projectId, head.nextAttemptAt, head.id], true);
    record.transitions.forEach((transition, index) => this.transitions.put([record.id, index], transition));
    record.attemptLog.forEach((attempt, index) => this.attempts.put([record.id, index], attempt));
  }

  remove(projectId: string, head: DeliveryHead): void {
    this.heads.remove([projectId, head.id]);
    this.byStatus.remove([projectId, head.status, head.id]);
    this.removeDue(projectId, head.status, head.nextAttemptAt, head.id);
    // Under model 2's keys too, where the store may hold them.
    const prefixes: string[][] = this.projectLogKeys ? [[head.id], [projectId, head.id]] : [[head.id]];
    for (const prefix of prefixes) {
      for (let index = 0; index < head.transitionCount; index++) this.transitions.remove([...prefix, index] as LogKey | ProjectLogKey);
      for (let index = 0; index < head.attemptCount; index++) this.attempts.remove([...prefix, index] as LogKey | ProjectLogKey);
    }
  }

  /**
   * Machine steps of one delivery: each step's transitions and attempt under their log indexes, the
   * head as the last step left it, and the status index moved from `storedStatus`. `again`: the
   * steps are written again after a commit that was never confirmed, which may have landed and
   * left the index at any status they pass through, so those are cleared too. The due index moves
   * from `storedDueAt` (the due time LMDB holds for a stored `retrying`) to the last step's; an
   * entry a step written again may have left is cleared too. Should one be left all the same (a
   * due time not known here), the reader drops it as stale (`HooklineStore.dueRetrying`).
   */
  putSteps(projectId: string, identity: DeliveryIdentity, storedStatus: DeliveryStatus, changes: readonly DeliveryChange[], again: boolean, storedDueAt: number | null = null): void {
    const deliveryId = identity.id;
    for (const change of changes) {
      change.transitions.forEach((transition, offset) => this.transitions.put([deliveryId, change.transitionIndex + offset], transition));
      if (change.attempt) this.attempts.put([deliveryId, change.attemptIndex], change.attempt);
    }
    const last = changes.at(-1)!;
    const head = headAfter(identity, last);
    this.heads.put([projectId, deliveryId], head);
    if (last.status !== storedStatus) this.byStatus.remove([projectId, storedStatus, deliveryId]);
    if (again) for (const change of changes) if (change.status !== last.status) this.byStatus.remove([projectId, change.status, deliveryId]);
    this.byStatus.put([projectId, last.status, deliveryId], scheduleOf(head));
    const lastDue = last.status === 'retrying' ? last.nextAttemptAt : null;
    if (storedDueAt !== lastDue) this.removeDue(projectId, storedStatus, storedDueAt, deliveryId);
    if (again) for (const change of changes) if (change.nextAttemptAt !== lastDue) this.removeDue(projectId, change.status, change.nextAttemptAt, deliveryId);
    if (lastDue !== null) this.due.put([projectId, lastDue, deliveryId], true);
  }

  /**
   * Retrying deliveries due by `until`, from `from` on (inclusive), in due order: at most `limit`
   * of those `skip` does not name (held in memory already), each with its schedule from the status
   * index. `next` is where the next read starts (the first entry not taken), null when none is left.
   * An entry whose delivery moved on (not retrying at that time any more: a step whose earlier due
   * time was not known when it was written) is returned in `stale`, for the caller to remove.
   */
  dueRetrying(projectId: string, from: DuePosition | null, until: number, limit: number, skip: (id: string) => boolean): { found: WaitingEntry[]; next: DuePosition | null; stale: DueKey[] } {
    const found: WaitingEntry[] = [];
    const stale: DueKey[] = [];
    const start: DueKey = from ? [projectId, from.dueAt, from.id] : [projectId, -Infinity, ''];
    for (const key of this.due.getKeys({ start, end: [projectId, Infinity, ''] })) {
      const [, dueAt, id] = key;
      if (dueAt > until || found.length >= limit) return { found, next: { dueAt, id }, stale };
      if (skip(id)) continue;
      const schedule = this.byStatus.get([projectId, 'retrying', id]);
      if (!schedule || schedule[0] !== dueAt) stale.push(key);
      else found.push({ id, status: 'retrying', schedule });
    }
    return { found, next: null, stale };
  }

  /**
   * Waiting deliveries (`statuses` of them) from id `fromId` on (inclusive), in id order: at most
   * `limit` of those `skip` does not name, each with its status and schedule. `next` is the id the
   * next read starts at, null when none is left.
   */
  waitingById(projectId: string, statuses: readonly DeliveryStatus[], fromId: string, limit: number, skip: (id: string) => boolean): { found: WaitingEntry[]; next: string | null } {
    const found: WaitingEntry[] = [];
    let next: string | null = null;
    this.forEachById(projectId, statuses, fromId, (id, status, schedule) => {
      if (skip(id)) return true;
      if (found.length >= limit) {
        next = id;
        return false;
      }
      found.push({ id, status, schedule });
      return true;
    });
    return { found, next };
  }

  /**
   * Visits the project's deliveries in `statuses` from id `fromId` on, in ascending id order (a
   * merge of each status's range), with their status and schedule, until `visit` returns false. A
   * visitor rather than a generator: a restart visits a million, and nested generators made three
   * objects more for each.
   */
  forEachById(projectId: string, statuses: readonly DeliveryStatus[], fromId: string, visit: (id: string, status: DeliveryStatus, schedule: DeliverySchedule) => boolean | void): void {
    const ranges = statuses.map((status) => this.byStatus.getRange({ start: [projectId, status, fromId], end: [projectId, status, '\uffff'] })[Symbol.iterator]());
    try {
      const heads = ranges.map((range) => range.next());
      for (;;) {
        let lowest = -1;
        for (let index = 0; index < heads.length; index++) {
          const head = heads[index]!;
          if (!head.done && (lowest < 0 || head.value.key[2] < heads[lowest]!.value.key[2])) lowest = index;
        }
        if (lowest < 0) return;
        const { key, value } = heads[lowest]!.value;
        if (visit(key[2], key[1], value) === false) return;
        heads[lowest] = ranges[lowest]!.next();
      }
    } finally {
      // Ends each range's read cursor, also when `visit` stopped or threw halfway.
      for (const range of ranges) range.return?.();
    }
  }

  /** Whether the project has a delivery in `statuses` (one key read per status). */
  hasAnyIn(projectId: string, statuses: readonly DeliveryStatus[]): boolean {
    return this.lastIdIn(projectId, statuses) !== '';
  }

  /** The greatest id of the project's deliveries in `statuses`, or '' when it has none. */
  lastIdIn(projectId: string, statuses: readonly DeliveryStatus[]): string {
    let last = '';
    for (const status of statuses) {
      for (const key of this.byStatus.getKeys({ start: [projectId, status, '\uffff'], end: [projectId, status, ''], reverse: true, limit: 1 })) if (key[2] > last) last = key[2];
    }
    return last;
  }

  /**
   * Counts the project's deliveries in `statuses` as one read snapshot held them when called: up to
   * `keysPerTurn` index keys now (`counted`), the rest in later turns of the event loop (`rest`,
   * null when none is left). LMDB walks a count key by key: 10,000,000 took 3.5 s at a start, all
   * of it before the node served, and longer with a cold page cache.
   */
  countInStatusesInTurns(projectId: string, statuses: readonly DeliveryStatus[], keysPerTurn = COUNT_TURN): { counted: number; rest: Promise<number> | null } {
    const snapshot = this.root.useReadTransaction();
    const ranges = statuses.map((status) => ({ start: [projectId, status, ''] as StatusKey, end: [projectId, status, '\uffff'] as StatusKey }));
    let counted = 0;
    /** One turn's walk; true once every range is counted. */
    const walk = (): boolean => {
      while (ranges.length > 0) {
        const range = ranges[0]!;
        // The key `keysPerTurn` on: the walk there is LMDB's (native); none left means the rest is short.
        let next: StatusKey | undefined;
        for (const key of this.byStatus.getKeys({ start: range.start, end: range.end, offset: keysPerTurn, limit: 1, transaction: snapshot })) next = key;
        if (next === undefined) {
          counted += this.byStatus.getKeysCount({ start: range.start, end: range.end, transaction: snapshot });
          ranges.shift();
          continue;
        }
        counted += keysPerTurn;
        range.start = next;
        return false;
      }
      return true;
    };
    const release = (): void => {
      try {
        snapshot.done();
      } catch {
        // The store closed meanwhile (a stop during the count): nothing is held any more.
      }
    };
    if (walk()) {
      release();
      return { counted, rest: null };
    }
    const now = counted;
    counted = 0;
    const rest = new Promise<number>((resolve, reject) => {
      const turn = (): void => {
        try {
          if (!walk()) return void setImmediate(turn);
          release();
          resolve(counted);
        } catch (error) {
          release();
          reject(error);
        }
      };
      setImmediate(turn);
    });
    return { counted: now, rest };
  }

  /** How many of the project's deliveries are in `statuses` (a count LMDB makes natively, without decoding). */
  countInStatuses(projectId: string, statuses: readonly DeliveryStatus[]): number {
    let count = 0;
    for (const status of statuses) count += this.byStatus.getKeysCount({ start: [projectId, status, ''], end: [projectId, status, '\uffff'] });
    return count;
  }

  /** Removes a delivery's due index entry, which only a `retrying` one with a due time has. */
  removeDue(projectId: string, status: DeliveryStatus, dueAt: number | null, deliveryId: string): void {
    if (status === 'retrying' && dueAt !== null) this.due.remove([projectId, dueAt, deliveryId]);
  }
}
