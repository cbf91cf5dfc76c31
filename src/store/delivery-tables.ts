import type { Database, RootDatabase } from 'lmdb';
import type { DeliveryStatus } from '../machines/index.js';
import type { DeliveryIdentity } from './delivery-model.js';
import { assembleRecord, headAfter, headOf, isWholeRecord, scheduleOf } from './delivery-model.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord, DeliverySchedule } from './records.js';
import { openTable } from './tables.js';

type HeadKey = [projectId: string, deliveryId: string];
type StatusKey = [projectId: string, status: DeliveryStatus, deliveryId: string];
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
const DELIVERY_MODEL = 3;
const PROJECT_LOG_KEYS_MODEL = 2;
/** Whole records converted per commit by the conversion at open. */
const CONVERSION_BATCH = 10_000;

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
  private readonly transitions: Database<DeliveryRecord['transitions'][number], LogKey | ProjectLogKey>;
  private readonly attempts: Database<DeliveryRecord['attemptLog'][number], LogKey | ProjectLogKey>;
  private readonly meta: Database<number, string>;
  /** Whether log entries may lie under model 2's keys (the store was written by it). */
  private projectLogKeys = false;

  constructor(private readonly root: RootDatabase) {
    this.heads = openTable(root, 'deliveries');
    this.byStatus = openTable(root, 'deliveries-by-status');
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
    record.transitions.forEach((transition, index) => this.transitions.put([record.id, index], transition));
    record.attemptLog.forEach((attempt, index) => this.attempts.put([record.id, index], attempt));
  }

  remove(projectId: string, head: DeliveryHead): void {
    this.heads.remove([projectId, head.id]);
    this.byStatus.remove([projectId, head.status, head.id]);
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
   * left the index at any status they pass through, so those are cleared too.
   */
  putSteps(projectId: string, identity: DeliveryIdentity, storedStatus: DeliveryStatus, changes: readonly DeliveryChange[], again: boolean): void {
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
  }
}
