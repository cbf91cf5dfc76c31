import { HooklineError } from '../errors.js';
import type { ErrorDetail } from '../errors.js';
import { deliveryTable } from '../machines/index.js';
import { headOf, withChanges } from '../store/delivery-model.js';
import type { DeadLetterFilter } from '../store/delivery-query.js';
import { inIdBounds } from '../store/ids.js';
import { isPastRetention, withinRetention } from '../store/retention.js';
import type { DeliveryRecord } from '../store/records.js';
import type { ProjectActorDeps } from './actor-deps.js';
import type { AdmissionState } from './admission.js';
import { admissionRefusal } from './admission.js';
import type { DeliveryLifecycle } from './delivery-lifecycle.js';
import type { LiveDelivery } from './live-delivery.js';
import { liveFromHead } from './live-delivery.js';
import { operationalStoreId } from './operational-events.js';
import type { Webhook } from './webhook-settings.js';
import { retryScheduleOf } from './webhook-settings.js';

/**
 * A project's recovery operations (retry, redrive, replay), and the prune of its deliveries past
 * retention, which must not race them. They bring stored deliveries back into the project's
 * lifecycle, so they run on its actor's turn like everything else that changes the project; the
 * actor owns this and hands it what it needs of itself.
 */

/** What recovery needs of the project's actor. */
export interface RecoveryHost {
  readonly projectId: string;
  readonly deps: ProjectActorDeps;
  readonly admission: AdmissionState;
  /** The project's deliveries and its operational ones, as the actor holds them. */
  readonly lifecycle: DeliveryLifecycle;
  readonly operational: DeliveryLifecycle;
  webhook(): Webhook | undefined;
  /** The delivery as stored, with the steps made in memory and not yet stored. */
  readDelivery(deliveryId: string): DeliveryRecord | undefined;
  /** A new delivery of the event, its id after every other of the project's. */
  newDeliveryRecord(eventId: string, eventType: DeliveryRecord['eventType'], now: number): DeliveryRecord;
}

export class ProjectRecovery {
  private readonly projectId: string;
  private readonly deps: ProjectActorDeps;
  private readonly lifecycle: DeliveryLifecycle;
  private readonly operational: DeliveryLifecycle;
  /** Deliveries a prune is deleting, each with the deletion's commit: recovery leaves them alone until it lands. */
  private readonly pruning = new Map<string, Promise<unknown>>();

  constructor(private readonly actor: RecoveryHost) {
    ({ projectId: this.projectId, deps: this.deps, lifecycle: this.lifecycle, operational: this.operational } = actor);
  }

  async retry(deliveryId: string): Promise<DeliveryRecord> {
    // Being pruned: the prune's outcome decides (gone, so a 404; or kept, should its commit fail).
    for (let pruned = this.pruning.get(deliveryId); pruned; pruned = this.pruning.get(deliveryId)) await pruned.catch(() => {});
    const before = this.actor.readDelivery(deliveryId);
    if (!before) throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `no delivery ${deliveryId} in this project`);
    // Gone as if pruned: a new round for it would outlive its own record in a changelog snapshot.
    if (isPastRetention(before, this.deps.retentionCutoffId())) {
      throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `delivery ${deliveryId} is ${before.status} and past HOOKLINE_RETENTION, so it is no longer retried and is about to be pruned; replay its event ${before.eventId} to send it again`);
    }
    const held = this.lifecycle.get(deliveryId);
    const delivery = held ?? this.toLive(deliveryId);
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: 'RETRY', roundSize: this.roundSize() });
    if (!step) {
      if (delivery.status === 'succeeded') throw new HooklineError('HOOKLINE_ERR_DELIVERY_SUCCEEDED', `delivery ${deliveryId} already succeeded; replay its event to send it again`);
      const heldBy = this.actor.webhook()?.state !== 'active' && (delivery.status === 'pending' || delivery.status === 'retrying') ? this.actor.webhook()?.state : undefined;
      throw new HooklineError(
        'HOOKLINE_ERR_DELIVERY_IN_PROGRESS',
        heldBy
          ? `delivery ${deliveryId} is ${delivery.status}, held while the endpoint is ${heldBy}; it will be attempted once the endpoint is active again (PUT /v1/webhook with "status": "active")`
          : `delivery ${deliveryId} is ${delivery.status}; it will be attempted without a retry`,
      );
    }
    // Only a dead letter's new round adds a waiting delivery; every retry writes its step.
    const refusal = admissionRefusal(this.actor.admission, { adding: delivery.status === 'dead_lettered' ? 1 : 0, unchanged: `delivery ${deliveryId} was not retried` });
    if (refusal) throw refusal;
    // The record as the RETRY step left it: re-reading the store could show a later step, since
    // the attempt it makes due may start (and commit) before this answer is sent.
    const change = await this.lifecycle.apply(delivery, 'RETRY', step);
    return withChanges(before, [change]);
  }

  /**
   * Starts a new round for every dead-lettered delivery that matches; returns how many. All or
   * none: when they do not all fit in the room HOOKLINE_MAX_WAITING_PER_PROJECT leaves, none is
   * started (a partial redrive would leave the rest dead without the operator noticing).
   */
  async redrive(filter: DeadLetterFilter): Promise<number> {
    // Oldest first: the dead letters are found newest first, and they join the ordered line (and the
    // ready queue) in the order they are taken in, so an ordered endpoint would get them reversed.
    const redrivable = [...this.redrivable(filter)].sort((a, b) => (a.delivery.id < b.delivery.id ? -1 : 1));
    if (redrivable.length === 0) return 0;
    const refusal = admissionRefusal(this.actor.admission, { adding: redrivable.length, unchanged: 'nothing was redriven', overloaded: (room) => tooManyToRedrive(this.projectId, redrivable.length, room) });
    if (refusal) throw refusal;
    const writes = redrivable.map(({ delivery, step }) => this.lifecycle.apply(delivery, 'REDRIVE', step));
    await Promise.all(writes);
    return writes.length;
  }

  /** How many deliveries `redrive` with this filter would start now. */
  redrivePreview(filter: DeadLetterFilter): number {
    let count = 0;
    for (const _ of this.redrivable(filter)) count++;
    return count;
  }

  /** The dead letters that match, each with the REDRIVE step that starts its new round. */
  private *redrivable(filter: DeadLetterFilter) {
    const event = { type: 'REDRIVE', roundSize: this.roundSize() } as const;
    for (const delivery of this.deadLetters(filter)) {
      const step = deliveryTable.next(delivery.status, delivery.counters, event);
      if (step) yield { delivery, step };
    }
  }

  /**
   * The project's dead letters as the delivery log shows them: those stored as dead-lettered, and
   * those whose dead-lettering is made in memory but not stored yet (`GET` already shows them, so a
   * redrive right after must take them too). Those past retention are left out, pruned or not.
   */
  private *deadLetters(requested: DeadLetterFilter): Generator<LiveDelivery> {
    const filter = withinRetention(requested, this.deps.retentionCutoffId());
    const matches = (id: string) => {
      const head = this.deps.store.getDeliveryHead(this.projectId, id);
      return head !== undefined && (filter.eventType === undefined || head.eventType === filter.eventType) ? head : undefined;
    };
    for (const id of this.deps.store.deliveryIdsByStatus(this.projectId, 'dead_lettered', filter)) {
      // Still in memory: either already moved on (skip), or dead-lettered with the commit visible but
      // not yet released from memory, which is a dead letter like any other.
      const held = this.lifecycle.get(id);
      if ((held && held.status !== 'dead_lettered') || this.pruning.has(id)) continue;
      const head = matches(id);
      if (head) yield held ?? liveFromHead(head, null);
    }
    for (const { id, shown } of this.lifecycle.statusesNotStored()) {
      if (shown !== 'dead_lettered' || !inIdBounds(id, filter)) continue;
      const head = matches(id);
      // A head already indexed as dead-lettered was taken above (its commit landed unannounced).
      if (head && head.status !== 'dead_lettered') yield this.lifecycle.get(id)!;
    }
  }

  async replay(eventId: string): Promise<string> {
    const event = this.deps.store.getEvent(this.projectId, eventId);
    if (!event) throw new HooklineError('HOOKLINE_ERR_EVENT_NOT_FOUND', `no stored event ${eventId} in this project`);
    if (!this.actor.webhook()) throw new HooklineError('HOOKLINE_ERR_NO_WEBHOOK_FOR_REPLAY', 'no webhook is configured to replay to; PUT /v1/webhook first');
    const refusal = admissionRefusal(this.actor.admission, { adding: 1, unchanged: `event ${eventId} was not replayed` });
    if (refusal) throw refusal;
    const record = this.actor.newDeliveryRecord(eventId, event.type, this.deps.clock.now());
    await this.lifecycle.tracked(this.deps.store.writeReplay(this.projectId, eventId, record));
    this.lifecycle.circuit?.probeNow(this.deps.clock.now());
    this.lifecycle.admit(headOf(record), event.envelope);
    return record.id;
  }

  /** Attempts in a round started now: the project's retry schedule as it is, or the node's. */
  private roundSize(): number {
    return retryScheduleOf(this.actor.webhook(), this.deps.retrySchedule).length;
  }

  /** A stored delivery not in memory (terminal), as it would be held. */
  private toLive(deliveryId: string): LiveDelivery {
    const head = this.deps.store.getDeliveryHead(this.projectId, deliveryId);
    if (!head) throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `no delivery ${deliveryId} in this project`);
    return liveFromHead(head, null);
  }

  /**
   * Deletes the terminal deliveries past retention that `found` names (found on the status index
   * in this same turn), the project's and its operational ones; returns how many went. Those held
   * in memory are kept: a retry or redrive has started a new round for them, or their last step is
   * still being written. Until the deletion commits, a redrive skips the others and a retry waits
   * for it, so that neither starts a new round for a delivery whose history is being deleted.
   */
  async prune(cutoffId: string, found: { project: readonly string[]; operational: readonly string[] }): Promise<number> {
    const project = found.project.filter((id) => !this.lifecycle.get(id) && !this.pruning.has(id));
    const operational = found.operational.filter((id) => !this.operational.get(id));
    const store = this.deps.store;
    const deleted = this.lifecycle.tracked(Promise.all([store.pruneTerminal(this.projectId, cutoffId, project), store.pruneTerminal(operationalStoreId(this.projectId), cutoffId, operational)]));
    for (const id of project) this.pruning.set(id, deleted);
    try {
      const [projectCount, operationalCount] = await deleted;
      return projectCount + operationalCount;
    } finally {
      for (const id of project) this.pruning.delete(id);
    }
  }
}

/** The `overloaded` refusal of a redrive that does not fit: how many it would start, how many fit, what to do. */
function tooManyToRedrive(projectId: string, wouldRedrive: number, room: number): { message: string; details: ErrorDetail[] } {
  const message = `the redrive would start ${wouldRedrive} dead letters, but project ${projectId} has room for ${room} more waiting deliveries (HOOKLINE_MAX_WAITING_PER_PROJECT); nothing was redriven. Narrow it with since, until or eventType (a dry run shows whether it fits), or send it again after Retry-After as waiting deliveries finish`;
  return { message, details: [{ message, projectId, wouldRedrive, room }] };
}
