import { HooklineError } from '../errors.js';
import { matchesFilter } from '../filter/evaluate.js';
import type { DeliveryStatus } from '../machines/index.js';
import { headOf, withChanges } from '../store/delivery-model.js';
import { newDeliveryId, newEventId } from '../store/ids.js';
import type { DeliveryChange, DeliveryRecord, EventRecord, IngestAnswer } from '../store/records.js';
import type { EventType } from '../sdk/types.js';
import type { EventInput } from '../transport/event-input.js';
import type { IngestResult } from '../transport/types.js';
import type { ProjectActorDeps } from './actor-deps.js';
import type { AdmissionState } from './admission.js';
import { admissionRefusal, shuttingDownError } from './admission.js';
import type { Circuit } from './circuit-breaker.js';
import { CLOSED_CIRCUIT } from './circuit-breaker.js';
import { DeliveryLifecycle, WAITING_STATUSES } from './delivery-lifecycle.js';
import type { FirstIngest } from './envelope.js';
import { firstIngestOf, isRepeatOf } from './envelope.js';
import { nextDeliveryId } from './ordered-line.js';
import { ProjectRecovery } from './project-recovery.js';
import type { ConfigureInput, Webhook } from './webhook-settings.js';
import { configureWebhook, operationalTarget, retryScheduleOf, rotateSecret, withWebhookDefaults } from './webhook-settings.js';
import type { OperationalEventData, OperationalEventType } from './operational-events.js';
import { endpointOutcome } from './outcome-reports.js';
import { operationalEnvelope, operationalStoreId } from './operational-events.js';

export type { DeliverySender, ProjectActorDeps } from './actor-deps.js';

/**
 * One project's actor. It owns the project's configuration snapshot and its live deliveries, and is
 * the only code that changes them. Its mailbox is the event loop: every handler changes state
 * synchronously before its first `await`, so handlers never interleave halfway through a change,
 * and persistence is queued in the same order the changes were made.
 *
 * This file holds the configuration and what brings new deliveries in: ingest, operational events,
 * and the restart's resume. The recovery operations (retry, redrive, replay) and the prune that must
 * not race them are `ProjectRecovery`'s; what happens to a delivery once it is live is
 * `DeliveryLifecycle`'s.
 */

export class ProjectActor {
  private webhook: Webhook | undefined;
  private readonly lifecycle: DeliveryLifecycle;
  /** Hookline's own events about the project, to its operational URL (operational-events.ts). */
  private readonly operational: DeliveryLifecycle;
  private lastDeliveryId = '';
  /** Retry, redrive, replay, and the prune that must not race them (project-recovery.ts). */
  readonly recovery: ProjectRecovery;
  private operationalView: { of: Webhook | undefined; target: Webhook | undefined } = { of: undefined, target: undefined };
  /** What ingest and the recovery operations ask before they take anything in (admission.ts). */
  readonly admission: AdmissionState;
  /**
   * Deliveries of ingests admitted and not yet stored: they count against the limit as the waiting
   * ones do. Counted only once stored, a batch's ingests (256 NATS messages in one turn, a POST of
   * a batch) were all admitted against the same count, and a project at 0 of 50 took 400.
   */
  private admittedUnstored = 0;

  constructor(
    readonly projectId: string,
    private readonly deps: ProjectActorDeps,
  ) {
    this.webhook = withWebhookDefaults(deps.store.getWebhook(projectId));
    this.lifecycle = new DeliveryLifecycle(projectId, deps, {
      webhook: () => this.webhook,
      save: (webhook) => this.saveWebhook(webhook),
      notify: (type, data) => this.notifyOperational(type, data),
    });
    this.operational = new DeliveryLifecycle(operationalStoreId(projectId), deps, {
      webhook: () => this.operationalTarget(),
      // Nothing to save: an operational delivery never changes the configuration.
      save: () => Promise.resolve(),
    });
    const lifecycle = this.lifecycle;
    // The node's stop counts from its start: an actor made after it (a project nobody used since
    // the start) refuses too, and none takes anything in while the transports stop.
    this.admission = { projectId, waiting: () => lifecycle.waiting + this.admittedUnstored, maxWaiting: deps.maxWaitingPerProject, store: deps.store, get isDraining() { return deps.nodeStopping() || lifecycle.isDraining; } };
    this.recovery = new ProjectRecovery({
      projectId,
      deps,
      admission: this.admission,
      lifecycle: this.lifecycle,
      operational: this.operational,
      webhook: () => this.webhook,
      readDelivery: (deliveryId) => this.readDelivery(deliveryId),
      newDeliveryRecord: (eventId, eventType, now) => this.newDeliveryRecord(eventId, eventType, now),
    });
  }

  /** Deliveries held in memory, the project's and its operational ones. */
  get liveCount(): number {
    return this.lifecycle.liveCount + this.operational.liveCount;
  }

  /** The project's deliveries not yet final, held or on disk (HOOKLINE_MAX_WAITING_PER_PROJECT bounds them). */
  get waiting(): number {
    return this.lifecycle.waiting;
  }

  /** Settles once the deliveries waiting on disk at the actor's start are all counted (delivery-lifecycle.ts). */
  get counted(): Promise<void> {
    return Promise.all([this.lifecycle.counted, this.operational.counted]).then(() => undefined);
  }

  /** The project's waiting deliveries and its operational ones. */
  get waitingWithOperational(): number {
    return this.lifecycle.waiting + this.operational.waiting;
  }

  get readyCount(): number {
    return this.lifecycle.readyCount + this.operational.readyCount;
  }

  getWebhook(): Webhook | undefined {
    return this.webhook;
  }

  /** The endpoint's circuit breaker as this node holds it (in memory only; closed after a start or a partition move). */
  circuit(): Circuit {
    return this.lifecycle.circuit?.state ?? CLOSED_CIRCUIT;
  }

  // Configuration -------------------------------------------------------------------------------

  async configure(input: ConfigureInput): Promise<Webhook> {
    if (this.admission.isDraining) throw shuttingDownError('the webhook was not changed');
    const webhook = configureWebhook(this.webhook, input, this.deps.clock.now());
    // A new URL, or the operator's word that the endpoint is back: the next due attempts are sent.
    this.lifecycle.circuit?.reset(this.deps.clock.now());
    await this.saveWebhook(webhook);
    return webhook;
  }

  async rotateSecret(graceSeconds: number): Promise<{ secret: string; previousSecretExpiresAt: number }> {
    if (this.admission.isDraining) throw shuttingDownError('the secret was not rotated');
    const current = this.requireWebhook();
    const { webhook, previousSecretExpiresAt } = rotateSecret(current, graceSeconds, this.deps.clock.now());
    await this.saveWebhook(webhook);
    return { secret: webhook.secrets[0]!.secret, previousSecretExpiresAt };
  }

  requireWebhook(): Webhook {
    if (!this.webhook) throw new HooklineError('HOOKLINE_ERR_WEBHOOK_NOT_CONFIGURED', 'no webhook is configured for this project; PUT /v1/webhook first');
    return this.webhook;
  }

  private saveWebhook(webhook: Webhook): Promise<void> {
    this.webhook = webhook;
    const saved = this.lifecycle.tracked(this.deps.store.putWebhook(this.projectId, webhook));
    this.lifecycle.configurationChanged();
    this.operational.configurationChanged();
    return saved;
  }

  /** The operational deliveries' configuration, derived once per configuration. */
  private operationalTarget(): Webhook | undefined {
    if (this.operationalView.of !== this.webhook) this.operationalView = { of: this.webhook, target: operationalTarget(this.webhook) };
    return this.operationalView.target;
  }

  /**
   * Stores an operational event and its delivery under the project's operational store id, then
   * hands it to the operational lifecycle. Not sent (nor stored) without an operational URL.
   */
  private notifyOperational<Type extends OperationalEventType>(type: Type, data: OperationalEventData[Type]): void {
    // On NATS too (HOOKLINE_NATS_OUTCOMES), with or without an operational URL.
    const change = this.deps.publishOutcome ? endpointOutcome(type, data) : null;
    if (change) this.deps.publishOutcome!(change);
    if (!this.webhook?.operationalUrl || this.lifecycle.isDraining) return;
    const now = this.deps.clock.now();
    const id = newEventId(now);
    const envelope = operationalEnvelope(id, type, data, now);
    // Only this actor reads the operational store id, and it knows these types are its own.
    const storedType = type as unknown as EventType;
    const delivery = this.newDeliveryRecord(id, storedType, now, retryScheduleOf(this.operationalTarget(), this.deps.retrySchedule));
    const event: EventRecord = { id, type: storedType, fingerprint: '', envelope, createdAt: now, answer: { id, deliveryId: delivery.id }, deliveryIds: [delivery.id] };
    this.operational.tracked(this.deps.store.writeIngest(operationalStoreId(this.projectId), event, delivery)).then(
      () => this.operational.admit(headOf(delivery), envelope),
      (error: unknown) => this.deps.logger.error({ err: error, projectId: this.projectId, type }, 'could not store an operational event; it is not sent'),
    );
  }

  // Ingest --------------------------------------------------------------------------------------

  ingest(input: EventInput, traceparent?: string): Promise<IngestResult> {
    if (this.lifecycle.isDraining) return Promise.reject(shuttingDownError());
    const now = this.deps.clock.now();
    // Marked even without an id: the producer may send it again under the id it was given.
    if (input.id === undefined) {
      const eventId = newEventId(now);
      return this.storeNewEvent(input, eventId, firstIngestOf(input, eventId, now), now, traceparent);
    }

    // Until the first ingest of the id is stored and replicated, a copy waits for its outcome.
    const sameId = this.deps.ingestsInFlight.get(this.projectId, input.id);
    if (sameId) return sameId.result.then((first) => this.repeatOf(input, sameId, first.answer));
    const stored = this.deps.store.getEvent(this.projectId, input.id);
    // A promise constructor, so that a conflict is a rejection like every other refusal, never a throw.
    if (stored) return new Promise((resolve) => resolve(this.repeatOf(input, stored, stored.answer)));

    // Made before it is stored: a copy of the id arriving meanwhile is compared with it.
    const first = firstIngestOf(input, input.id, now);
    const result = this.storeNewEvent(input, input.id, first, now, traceparent);
    this.deps.ingestsInFlight.track(this.projectId, input.id, { ...first, result });
    return result;
  }

  private repeatOf(input: EventInput, first: FirstIngest, answer: IngestAnswer): IngestResult {
    if (!isRepeatOf(input, first)) {
      throw new HooklineError('HOOKLINE_ERR_EVENT_ID_CONFLICT', `event ${answer.id} was already accepted with a different body; use a new id for a new event`);
    }
    return { answer, duplicate: true };
  }

  /** Whether the event gets a delivery under the current configuration: its type, then the payload filter. */
  matches(input: EventInput): boolean {
    const webhook = this.webhook;
    if (webhook === undefined || !webhook.eventTypes.includes(input.type)) return false;
    return webhook.filter === null || matchesFilter(webhook.filter, { type: input.type, metadata: input.metadata ?? {}, data: input.data });
  }

  /**
   * Why no new event (a matching one, when `matched`) may be stored now, or null. A batch asks
   * once before any of its events, so that a node already refusing answers it whole.
   */
  admissionRefusal(matched: boolean): HooklineError | null {
    return admissionRefusal(this.admission, { adding: matched ? 1 : 0, unchanged: 'nothing was stored' });
  }

  private async storeNewEvent(input: EventInput, eventId: string, { fingerprint, envelope }: FirstIngest, now: number, traceparent: string | undefined): Promise<IngestResult> {
    const matched = this.matches(input);
    const refusal = this.admissionRefusal(matched);
    if (refusal) throw refusal;
    const delivery = matched ? this.newDeliveryRecord(eventId, input.type, now) : null;
    const answer: IngestAnswer = { id: eventId, deliveryId: delivery?.id ?? null };
    const event: EventRecord = { id: eventId, type: input.type, fingerprint, envelope, createdAt: now, answer, deliveryIds: delivery ? [delivery.id] : [] };
    // Only while tracing is on: the event's later spans (attempts, dead letter) take it as parent.
    if (traceparent !== undefined) event.traceparent = traceparent;
    if (delivery) this.admittedUnstored++;
    try {
      await this.lifecycle.tracked(this.deps.store.writeIngest(this.projectId, event, delivery));
    } catch (error) {
      throw notStoredError(error);
    } finally {
      // In the same turn as `admit` below, which counts it as waiting.
      if (delivery) this.admittedUnstored--;
    }
    this.deps.metrics.eventsIngested.inc({ matched: String(matched) });
    if (delivery) this.lifecycle.admit(headOf(delivery), envelope);
    return { answer, duplicate: false };
  }

  private newDeliveryRecord(eventId: string, eventType: DeliveryRecord['eventType'], now: number, schedule = retryScheduleOf(this.webhook, this.deps.retrySchedule)): DeliveryRecord {
    const firstDelay = schedule[0] ?? 0;
    // Strictly increasing, so that ordered delivery finds ingest order again after a restart.
    this.lastDeliveryId = nextDeliveryId(newDeliveryId(now), this.lastDeliveryId);
    return {
      id: this.lastDeliveryId,
      eventId,
      eventType,
      status: 'pending',
      attempts: 0,
      roundAttempts: 0,
      roundSize: schedule.length,
      nextAttemptAt: now + firstDelay,
      createdAt: now,
      updatedAt: now,
      attemptLog: [],
      transitions: [{ from: null, to: 'pending', event: 'CREATED', at: now }],
    };
  }

  // Reads ---------------------------------------------------------------------------------------

  /** The delivery as stored, with the steps made in memory and not yet stored (an attempt in flight). */
  readDelivery(deliveryId: string): DeliveryRecord | undefined {
    const record = this.deps.store.getDelivery(this.projectId, deliveryId);
    return record && withChanges(record, this.lifecycle.unwrittenChanges(deliveryId));
  }

  /** Whether the delivery is held in memory (live). */
  holds(deliveryId: string): boolean {
    return this.lifecycle.get(deliveryId) !== undefined;
  }

  /** Steps of a live delivery made in memory and not yet stored. */
  unstoredChanges(deliveryId: string): DeliveryChange[] {
    return this.lifecycle.unwrittenChanges(deliveryId);
  }

  /** Status of each live delivery whose latest step is not stored yet, as stored and as shown. */
  statusesNotStored(): Iterable<{ id: string; shown: DeliveryStatus }> {
    return this.lifecycle.statusesNotStored();
  }

  /** Due time reached (from the scheduler), for a delivery of the project or one of its operational ones. */
  onDue(deliveryId: string, dueAt: number): void {
    (this.lifecycle.get(deliveryId) ? this.lifecycle : this.operational).onDue(deliveryId, dueAt);
  }

  // Restart ------------------------------------------------------------------------------------

  /**
   * At start, or when this node takes the project's partition over: the waiting deliveries are
   * read from disk into each lifecycle's window (one caught mid-attempt is attempted again).
   */
  startFromDisk(): void {
    // New ids sort after the stored ones even when this node's clock is behind the previous owner's.
    for (const storeId of [this.projectId, operationalStoreId(this.projectId)]) {
      const lastStored = this.deps.store.deliveryTables.lastIdIn(storeId, WAITING_STATUSES);
      if (lastStored > this.lastDeliveryId) this.lastDeliveryId = lastStored;
    }
    this.lifecycle.startFromDisk();
    this.operational.startFromDisk();
  }

  // Shutdown ------------------------------------------------------------------------------------

  /**
   * Stops starting attempts and resolves when none is in flight and the changes already made are
   * written, or when the deadline passes.
   */
  async drain(deadlineMs: number): Promise<void> {
    await Promise.all([this.lifecycle.drain(deadlineMs), this.operational.drain(deadlineMs)]);
  }

  /** The actor is being dropped (its partition moved): its deliveries leave memory, on disk for the next owner. */
  dropFromMemory(): void {
    this.lifecycle.dropFromMemory();
    this.operational.dropFromMemory();
  }
}

/** Why an ingest's event was not kept (its commit or its replication failed), as the sender is told. */
function notStoredError(error: unknown): HooklineError {
  const code = (error as { code?: unknown }).code;
  // Cluster mode: the lease lapsed before the append; said as it is, so the call goes to the next owner.
  if (code === 'HOOKLINE_ERR_PARTITION_MOVING') return error as HooklineError;
  if (code === 'ENOSPC' || code === 'MDB_MAP_FULL' || /MDB_MAP_FULL|ENOSPC|No space left/.test(String((error as Error).message))) {
    return new HooklineError('HOOKLINE_ERR_STORAGE_FULL', 'the disk holding the data directory is full; nothing was stored. Free space; stored events are still being delivered', { cause: error, retryAfterSeconds: 30 });
  }
  return new HooklineError('HOOKLINE_ERR_STORAGE', 'the event could not be stored durably and was not accepted; send it again', { cause: error, retryAfterSeconds: 1 });
}
