import type { DeliveryCounters, DeliveryStatus } from '../machines/index.js';
import type { DeliveryIdentity } from '../store/delivery-model.js';
import type { AttemptRecord, DeliveryChange, DeliveryHead, DeliverySchedule, TransitionRecord } from '../store/records.js';
import type { HooklineStore } from '../store/store.js';

/** A delivery held in memory by its project's actor while it is not terminal. */
export interface LiveDelivery {
  id: string;
  /**
   * Its event and creation, which its head carries; null for a delivery resumed at start from the
   * status index alone, until its first attempt or step reads the head (`identityOf`).
   */
  identity: DeliveryIdentity | null;
  status: DeliveryStatus;
  /** The status LMDB holds (its status index entry) once the steps written so far are in. */
  storedStatus: DeliveryStatus;
  /** The due time LMDB holds while it is stored `retrying` (its due index entry), else null. */
  storedDueAt: number | null;
  counters: DeliveryCounters;
  nextAttemptAt: number | null;
  /** Held only until the first attempt, so a retrying delivery costs no envelope in memory. */
  envelope: Uint8Array | null;
  queued: boolean;
  /** Steps made in memory and not yet committed, oldest first; `NO_STEPS` (shared) while there are none. */
  unwritten: UnwrittenStep[];
  /** Log indexes the next step's transitions and attempt take. */
  transitionCount: number;
  attemptCount: number;
  /** A writer runs for this delivery: it alone writes its steps, so they land in order. */
  writing: boolean;
  /** Due beyond the window's horizon when last scheduled: not in the scheduler's heap, it leaves memory once stored. */
  dueOnDisk: boolean;
}

export interface UnwrittenStep {
  change: DeliveryChange;
  /** Whoever waits for this step's commit; told of the first failure, then no longer waiting. */
  waiter: { resolve(): void; reject(error: unknown): void } | null;
  /** Cluster: an attempt start already in the changelog, ahead of its commit with the outcome. */
  appended?: true;
}

/**
 * The empty step list every delivery starts with, shared (frozen: a step is pushed onto a list of
 * the delivery's own). With a million deliveries resumed, an empty array each was 16 MB of heap.
 */
export const NO_STEPS: UnwrittenStep[] = Object.freeze([]) as unknown as UnwrittenStep[];

/**
 * Counters of resumed deliveries, shared between those with the same values (most retrying ones
 * have the same few): a step replaces a delivery's counters, never changes them in place.
 */
const sharedCounters = new Map<string, Readonly<DeliveryCounters>>();
/** The counters returned last: a restart resumes runs of deliveries with the same ones, and the map's key is a new string each call. */
let lastCounters: Readonly<DeliveryCounters> | null = null;

function countersOf(attempts: number, roundAttempts: number, maxAttempts: number): DeliveryCounters {
  const last = lastCounters;
  if (last !== null && last.attempts === attempts && last.roundAttempts === roundAttempts && last.maxAttempts === maxAttempts) return last;
  const key = `${attempts}/${roundAttempts}/${maxAttempts}`;
  let counters = sharedCounters.get(key);
  if (!counters) sharedCounters.set(key, (counters = Object.freeze({ attempts, roundAttempts, maxAttempts })));
  return (lastCounters = counters);
}

/** A stored delivery as held in memory. */
export function liveFromHead(head: DeliveryHead, envelope: Uint8Array | null): LiveDelivery {
  return {
    id: head.id,
    identity: { id: head.id, eventId: head.eventId, eventType: head.eventType, createdAt: head.createdAt },
    status: head.status,
    storedStatus: head.status,
    storedDueAt: head.status === 'retrying' ? head.nextAttemptAt : null,
    counters: countersOf(head.attempts, head.roundAttempts, head.roundSize),
    nextAttemptAt: head.nextAttemptAt,
    envelope,
    queued: false,
    unwritten: NO_STEPS,
    transitionCount: head.transitionCount,
    attemptCount: head.attemptCount,
    writing: false,
    dueOnDisk: false,
  };
}

/** A waiting delivery as read from disk (at start, or into its lifecycle's window) from its status index entry. */
export function liveFromSchedule(id: string, status: DeliveryStatus, schedule: DeliverySchedule): LiveDelivery {
  const [nextAttemptAt, attempts, roundAttempts, roundSize, transitionCount, attemptCount] = schedule;
  return {
    id,
    identity: null,
    status,
    storedStatus: status,
    storedDueAt: status === 'retrying' ? nextAttemptAt : null,
    counters: countersOf(attempts, roundAttempts, roundSize),
    nextAttemptAt,
    envelope: null,
    queued: false,
    unwritten: NO_STEPS,
    transitionCount,
    attemptCount,
    writing: false,
    dueOnDisk: false,
  };
}

/**
 * Lets a retrying delivery whose steps are all stored hold no more than a resumed one: its identity
 * goes (read again from its head at the next attempt) and its counters become the shared ones. With
 * 100,000 retrying, each one's identity, eventId, eventType and counters were about 19 MB of heap.
 */
export function toRest(delivery: LiveDelivery): void {
  if (delivery.status !== 'retrying' || delivery.unwritten.length > 0 || delivery.writing) return;
  delivery.identity = null;
  const { attempts, roundAttempts, maxAttempts } = delivery.counters;
  delivery.counters = countersOf(attempts, roundAttempts, maxAttempts);
}

/** The delivery's identity, read from its head the first time it is needed. */
export function identityOf(store: HooklineStore, projectId: string, delivery: LiveDelivery): DeliveryIdentity {
  if (!delivery.identity) {
    const head = store.getDeliveryHead(projectId, delivery.id);
    if (!head) throw new Error(`delivery ${delivery.id} of ${projectId} has no stored head`);
    delivery.identity = { id: delivery.id, eventId: head.eventId, eventType: head.eventType, createdAt: head.createdAt };
  }
  return delivery.identity;
}

/** The change a step makes, as stored: the delivery as the step left it, at the log indexes its entries take. */
export function changeOf(delivery: LiveDelivery, transitions: TransitionRecord[], now: number, attempt: AttemptRecord | undefined): DeliveryChange {
  return {
    status: delivery.status,
    attempts: delivery.counters.attempts,
    roundAttempts: delivery.counters.roundAttempts,
    roundSize: delivery.counters.maxAttempts,
    nextAttemptAt: delivery.nextAttemptAt,
    updatedAt: now,
    transitions,
    transitionIndex: delivery.transitionCount,
    attemptIndex: delivery.attemptCount,
    ...(attempt ? { attempt } : {}),
  };
}
