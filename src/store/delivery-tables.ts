import type { Database, RootDatabase } from 'lmdb';
import type { DeliveryStatus } from '../machines/index.js';
import type { DeliveryIdentity } from './delivery-model.js';
import { assembleRecord, headAfter, headOf, isWholeRecord, scheduleOf } from './delivery-model.js';
import type { DeliveryChange, DeliveryHead, DeliveryRecord, DeliverySchedule } from './records.js';
import { openTable } from './tables.js';

type HeadKey = [projectId: string, deliveryId: string];
type StatusKey = [projectId: string, status: DeliveryStatus, deliveryId: string];
type LogKey = [projectId: string, deliveryId: string, index: number];

/** Version of the delivery write model in `meta`; absent in stores written before it (whole records). */
const DELIVERY_MODEL_KEY = 'delivery-model';
const DELIVERY_MODEL = 2;
/** Whole records converted per commit by the conversion at open. */
const CONVERSION_BATCH = 10_000;

/**
 * The LMDB tables of deliveries: heads (`deliveries`), the status index whose values are the
 * schedules a restart resumes from (`deliveries-by-status`), and the transitions and attempts under
 * `[projectId, deliveryId, index]` (`delivery-transitions`, `delivery-attempts`). The writes here
 * are issued inside the caller's commit (`HooklineStore` owns commits, durability and replication);
 * none reads what it replaces.
 */
export class DeliveryTables {
  readonly heads: Database<DeliveryHead, HeadKey>;
  readonly byStatus: Database<DeliverySchedule, StatusKey>;
  private readonly transitions: Database<DeliveryRecord['transitions'][number], LogKey>;
  private readonly attempts: Database<DeliveryRecord['attemptLog'][number], LogKey>;
  private readonly meta: Database<number, string>;

  constructor(private readonly root: RootDatabase) {
    this.heads = openTable(root, 'deliveries');
    this.byStatus = openTable(root, 'deliveries-by-status');
    this.transitions = openTable(root, 'delivery-transitions');
    this.attempts = openTable(root, 'delivery-attempts');
    this.meta = openTable(root, 'meta');
  }

  /**
   * Converts the whole delivery records of a store written by the earlier model into heads and log
   * entries, once (the model's version is kept in `meta`), in commits of 10,000. A store opened
   * halfway through a conversion that was cut off converts the rest: both forms are told apart.
   */
  convertWholeRecords(): void {
    if (this.meta.get(DELIVERY_MODEL_KEY) === DELIVERY_MODEL) return;
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
      this.meta.put(DELIVERY_MODEL_KEY, DELIVERY_MODEL);
    });
  }

  /** The delivery with its attempt log and transitions. */
  get(projectId: string, deliveryId: string): DeliveryRecord | undefined {
    const head = this.heads.get([projectId, deliveryId]);
    return head ? this.assemble(projectId, head) : undefined;
  }

  assemble(projectId: string, head: DeliveryHead): DeliveryRecord {
    const range = { start: [projectId, head.id, 0] as LogKey, end: [projectId, head.id, Number.MAX_SAFE_INTEGER] as LogKey };
    return assembleRecord(head, [...this.transitions.getRange(range).map(({ value }) => value)], [...this.attempts.getRange(range).map(({ value }) => value)]);
  }

  /** A whole record as head and log entries (a new delivery, a restored or converted one). */
  putWholeRecord(projectId: string, record: DeliveryRecord): void {
    const head = headOf(record);
    this.heads.put([projectId, record.id], head);
    this.byStatus.put([projectId, record.status, record.id], scheduleOf(head));
    record.transitions.forEach((transition, index) => this.transitions.put([projectId, record.id, index], transition));
    record.attemptLog.forEach((attempt, index) => this.attempts.put([projectId, record.id, index], attempt));
  }

  remove(projectId: string, head: DeliveryHead): void {
    this.heads.remove([projectId, head.id]);
    this.byStatus.remove([projectId, head.status, head.id]);
    for (let index = 0; index < head.transitionCount; index++) this.transitions.remove([projectId, head.id, index]);
    for (let index = 0; index < head.attemptCount; index++) this.attempts.remove([projectId, head.id, index]);
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
      change.transitions.forEach((transition, offset) => this.transitions.put([projectId, deliveryId, change.transitionIndex + offset], transition));
      if (change.attempt) this.attempts.put([projectId, deliveryId, change.attemptIndex], change.attempt);
    }
    const last = changes.at(-1)!;
    const head = headAfter(identity, last);
    this.heads.put([projectId, deliveryId], head);
    if (last.status !== storedStatus) this.byStatus.remove([projectId, storedStatus, deliveryId]);
    if (again) for (const change of changes) if (change.status !== last.status) this.byStatus.remove([projectId, change.status, deliveryId]);
    this.byStatus.put([projectId, last.status, deliveryId], scheduleOf(head));
  }
}
