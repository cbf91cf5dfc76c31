import { HooklineError } from '../errors.js';
import { deliveryTable } from '../machines/index.js';
import type { DeliveryCounters, DeliveryEventType, DeliveryStatus, DeliveryStep } from '../machines/index.js';
import { nodeHmacBackend } from '../signing/node-hmac.js';
import { formatSignatureHeader, secretsToKeys } from '../signing/sign.js';
import { newDeliveryId, newEventId } from '../store/ids.js';
import type { DeliveryRecord, EventRecord, IngestAnswer, TransitionRecord, WebhookRecord } from '../store/records.js';
import type { HooklineStore } from '../store/store.js';
import type { EventInput } from '../transport/event-input.js';
import type { AttemptOutcome, SendRequest } from '../transport/http-sender.js';
import type { Clock } from './clock.js';
import type { DeliveryScheduler } from './delivery-scheduler.js';
import type { EngineMetrics } from './engine-metrics.js';
import { buildEnvelope, eventFingerprint } from './envelope.js';
import { FifoQueue } from './fifo-queue.js';
import { decideRetry } from './retry-policy.js';
import type { ConfigureInput } from './webhook-settings.js';
import { configureWebhook, disableWebhook, rotateSecret, signingSecrets } from './webhook-settings.js';

/**
 * One project's actor. It owns the project's configuration snapshot and its live deliveries, and is
 * the only code that changes them. Its mailbox is the event loop: every handler changes state
 * synchronously before its first `await`, so handlers never interleave halfway through a change,
 * and persistence is queued in the same order the changes were made.
 *
 * A live delivery moves on the compiled delivery table (the XState machine, without its per-step
 * cost). The table names effects (`scheduleRetry`, `makeDueNow`, `startRound`, `recordDeadLetter`);
 * `runEffects` gives them meaning here. Deliveries stay in memory until their terminal state is
 * committed, so anything not in memory can be read from LMDB as it is.
 */

export interface DeliverySender {
  send(request: SendRequest): Promise<AttemptOutcome>;
}

export interface Logger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface ProjectActorDeps {
  store: HooklineStore;
  scheduler: DeliveryScheduler;
  sender: DeliverySender;
  clock: Clock;
  random: () => number;
  metrics: EngineMetrics;
  logger: Logger;
  retrySchedule: readonly number[];
  retryJitter: boolean;
  disableAfterMs: number;
  endpointConcurrency: number;
  /** Shared by every actor of the engine: deliveries held in memory, and the most allowed. */
  liveBudget: { count: number; readonly max: number };
  /**
   * Cluster mode: whether this node may act for the project right now (its partition's lease is
   * valid). Checked before every attempt, so a node that lost its lease starts none.
   * @default always
   */
  mayAct?: () => boolean;
}

export interface IngestResult {
  answer: IngestAnswer;
  /** True when the event id was seen before with the same body: nothing new was stored. */
  duplicate: boolean;
}

interface LiveDelivery {
  id: string;
  eventId: string;
  status: DeliveryStatus;
  counters: DeliveryCounters;
  nextAttemptAt: number | null;
  /** Held only until the first attempt, so a retrying delivery costs no envelope in memory. */
  envelope: Uint8Array | null;
  queued: boolean;
}

const USER_AGENT = 'Hookline/0.1 (+https://www.standardwebhooks.com)';

export class ProjectActor {
  private webhook: WebhookRecord | undefined;
  private readonly live = new Map<string, LiveDelivery>();
  private readonly ready = new FifoQueue<LiveDelivery>();
  private readonly ingesting = new Map<string, { fingerprint: string; result: Promise<IngestResult> }>();
  private inflight = 0;
  /** Store writes (and their replication) not yet settled; a drain waits for them. */
  private readonly pendingWrites = new Set<Promise<unknown>>();
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  private signingKeys: { keys: Uint8Array[]; validUntil: number } | null = null;

  constructor(
    readonly projectId: string,
    private readonly deps: ProjectActorDeps,
  ) {
    this.webhook = deps.store.getWebhook(projectId);
  }

  get liveCount(): number {
    return this.live.size;
  }

  get readyCount(): number {
    return this.ready.length;
  }

  getWebhook(): WebhookRecord | undefined {
    return this.webhook;
  }

  // Configuration -------------------------------------------------------------------------------

  async configure(input: ConfigureInput): Promise<WebhookRecord> {
    const webhook = configureWebhook(this.webhook, input, this.deps.clock.now());
    await this.saveWebhook(webhook);
    return webhook;
  }

  async rotateSecret(graceSeconds: number): Promise<{ secret: string; previousSecretExpiresAt: number }> {
    const current = this.requireWebhook();
    const { webhook, previousSecretExpiresAt } = rotateSecret(current, graceSeconds, this.deps.clock.now());
    await this.saveWebhook(webhook);
    return { secret: webhook.secrets[0]!.secret, previousSecretExpiresAt };
  }

  requireWebhook(): WebhookRecord {
    if (!this.webhook) throw new HooklineError('HOOKLINE_ERR_WEBHOOK_NOT_CONFIGURED', 'no webhook is configured for this project; PUT /v1/webhook first');
    return this.webhook;
  }

  private saveWebhook(webhook: WebhookRecord): Promise<void> {
    this.webhook = webhook;
    this.signingKeys = null;
    const saved = this.tracked(this.deps.store.putWebhook(this.projectId, webhook));
    this.pump();
    return saved;
  }

  // Ingest --------------------------------------------------------------------------------------

  ingest(input: EventInput): Promise<IngestResult> {
    if (this.draining) return Promise.reject(new HooklineError('HOOKLINE_ERR_SHUTTING_DOWN', 'this node is draining; send the event again shortly'));
    const now = this.deps.clock.now();
    if (input.id === undefined) return this.storeNewEvent(input, newEventId(now), '', now);

    const fingerprint = eventFingerprint(input);
    const sameId = this.ingesting.get(input.id);
    if (sameId) return sameId.result.then((first) => this.repeatOf(fingerprint, sameId.fingerprint, first.answer));
    const stored = this.deps.store.getEvent(this.projectId, input.id);
    if (stored) return Promise.resolve(this.repeatOf(fingerprint, stored.fingerprint, stored.answer));

    const result = this.storeNewEvent(input, input.id, fingerprint, now);
    const entry = { fingerprint, result };
    this.ingesting.set(input.id, entry);
    const forget = () => this.ingesting.delete(input.id!);
    result.then(forget, forget);
    return result;
  }

  private repeatOf(fingerprint: string, firstFingerprint: string, answer: IngestAnswer): IngestResult {
    if (fingerprint !== firstFingerprint) {
      throw new HooklineError('HOOKLINE_ERR_EVENT_ID_CONFLICT', `event ${answer.id} was already accepted with a different body; use a new id for a new event`);
    }
    return { answer, duplicate: true };
  }

  private async storeNewEvent(input: EventInput, eventId: string, fingerprint: string, now: number): Promise<IngestResult> {
    const matched = this.webhook !== undefined && this.webhook.eventTypes.includes(input.type);
    if (matched && this.deps.liveBudget.count >= this.deps.liveBudget.max) {
      throw new HooklineError('HOOKLINE_ERR_OVERLOADED', `${this.deps.liveBudget.count} deliveries are already waiting (HOOKLINE_MAX_LIVE_DELIVERIES); nothing was stored, send again shortly`, { retryAfterSeconds: 5 });
    }
    if (this.deps.store.isOverQuota()) {
      throw new HooklineError('HOOKLINE_ERR_STORAGE_FULL', 'the data directory is at HOOKLINE_MAX_DATA_SIZE or its disk is nearly full; nothing was stored. Free space or raise the limit; stored events are still being delivered', { retryAfterSeconds: 30 });
    }
    const envelope = buildEnvelope(input, eventId, now);
    const delivery = matched ? this.newDeliveryRecord(eventId, input.type, now) : null;
    const answer: IngestAnswer = { id: eventId, deliveryId: delivery?.id ?? null };
    const event: EventRecord = { id: eventId, type: input.type, fingerprint, envelope, createdAt: now, answer, deliveryIds: delivery ? [delivery.id] : [] };
    try {
      await this.tracked(this.deps.store.writeIngest(this.projectId, event, delivery));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'ENOSPC' || code === 'MDB_MAP_FULL' || /MDB_MAP_FULL|ENOSPC|No space left/.test(String((error as Error).message))) {
        throw new HooklineError('HOOKLINE_ERR_STORAGE_FULL', 'the disk holding the data directory is full; nothing was stored. Free space; stored events are still being delivered', { cause: error, retryAfterSeconds: 30 });
      }
      throw new HooklineError('HOOKLINE_ERR_STORAGE', 'the event could not be stored durably and was not accepted; send it again', { cause: error, retryAfterSeconds: 1 });
    }
    this.deps.metrics.eventsIngested.inc({ matched: String(matched) });
    if (delivery) this.admit(delivery, envelope);
    return { answer, duplicate: false };
  }

  private newDeliveryRecord(eventId: string, eventType: DeliveryRecord['eventType'], now: number): DeliveryRecord {
    const firstDelay = this.deps.retrySchedule[0] ?? 0;
    return {
      id: newDeliveryId(now),
      eventId,
      eventType,
      status: 'pending',
      attempts: 0,
      roundAttempts: 0,
      roundSize: this.deps.retrySchedule.length,
      nextAttemptAt: now + firstDelay,
      createdAt: now,
      updatedAt: now,
      attemptLog: [],
      transitions: [{ from: null, to: 'pending', event: 'CREATED', at: now }],
    };
  }

  /** Takes a committed, non-terminal delivery into memory and onto the ready queue or the scheduler. */
  private admit(record: DeliveryRecord, envelope: Uint8Array | null): void {
    const delivery: LiveDelivery = {
      id: record.id,
      eventId: record.eventId,
      status: record.status,
      counters: { attempts: record.attempts, roundAttempts: record.roundAttempts, maxAttempts: record.roundSize },
      nextAttemptAt: record.nextAttemptAt,
      envelope,
      queued: false,
    };
    this.hold(delivery);
    this.scheduleOrQueue(delivery);
  }

  // Recovery: restart, retry, redrive, replay ---------------------------------------------------

  /** Resumes a delivery found live in LMDB at start; one caught mid-attempt is attempted again. */
  restore(record: DeliveryRecord): void {
    this.admit(record, null);
    // The stored status decides: a due `pending`/`retrying` delivery is already `delivering` again
    // here, its new attempt started by `admit`, and must not be taken for an interrupted one.
    if (record.status === 'delivering') this.step(this.live.get(record.id)!, 'ATTEMPT_INTERRUPTED');
  }

  async retry(deliveryId: string): Promise<DeliveryRecord> {
    const delivery = this.live.get(deliveryId) ?? this.loadTerminal(deliveryId);
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: 'RETRY' });
    if (!step) {
      if (delivery.status === 'succeeded') throw new HooklineError('HOOKLINE_ERR_DELIVERY_SUCCEEDED', `delivery ${deliveryId} already succeeded; replay its event to send it again`);
      throw new HooklineError('HOOKLINE_ERR_DELIVERY_IN_PROGRESS', `delivery ${deliveryId} is ${delivery.status}; it will be attempted without a retry`);
    }
    // The record as the RETRY step left it: re-reading the store could show a later step, since
    // the attempt it makes due may start (and commit) in the same write batch.
    const record = await this.apply(delivery, 'RETRY', step);
    if (!record) throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `no delivery ${deliveryId} in this project`);
    return record;
  }

  /** Starts a new round for every dead-lettered delivery that matches; returns how many. */
  async redrive(filter: { fromId?: string; toId?: string; eventType?: string }): Promise<number> {
    const writes: Promise<unknown>[] = [];
    for (const id of this.deps.store.deliveryIdsByStatus(this.projectId, 'dead_lettered', filter)) {
      // Still in memory: either already moved on (skip), or dead-lettered with the commit visible but
      // not yet released from memory, which is a dead letter like any other.
      const held = this.live.get(id);
      if (held && held.status !== 'dead_lettered') continue;
      const record = this.deps.store.getDelivery(this.projectId, id);
      if (!record || (filter.eventType !== undefined && record.eventType !== filter.eventType)) continue;
      const delivery = held ?? this.toLive(record);
      const step = deliveryTable.next(delivery.status, delivery.counters, { type: 'REDRIVE' });
      if (step) writes.push(this.apply(delivery, 'REDRIVE', step));
    }
    await Promise.all(writes);
    return writes.length;
  }

  async replay(eventId: string): Promise<string> {
    const event = this.deps.store.getEvent(this.projectId, eventId);
    if (!event) throw new HooklineError('HOOKLINE_ERR_EVENT_NOT_FOUND', `no stored event ${eventId} in this project`);
    if (!this.webhook) throw new HooklineError('HOOKLINE_ERR_NO_WEBHOOK_FOR_REPLAY', 'no webhook is configured to replay to; PUT /v1/webhook first');
    const record = this.newDeliveryRecord(eventId, event.type, this.deps.clock.now());
    await this.tracked(this.deps.store.writeReplay(this.projectId, eventId, record));
    this.admit(record, event.envelope);
    return record.id;
  }

  private loadTerminal(deliveryId: string): LiveDelivery {
    const record = this.deps.store.getDelivery(this.projectId, deliveryId);
    if (!record) throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `no delivery ${deliveryId} in this project`);
    return this.toLive(record);
  }

  private toLive(record: DeliveryRecord): LiveDelivery {
    return {
      id: record.id,
      eventId: record.eventId,
      status: record.status,
      counters: { attempts: record.attempts, roundAttempts: record.roundAttempts, maxAttempts: record.roundSize },
      nextAttemptAt: record.nextAttemptAt,
      envelope: null,
      queued: false,
    };
  }

  // Delivery lifecycle --------------------------------------------------------------------------

  /** Due time reached (from the scheduler). Stale entries (rescheduled since) are ignored. */
  onDue(deliveryId: string, dueAt: number): void {
    const delivery = this.live.get(deliveryId);
    if (!delivery || delivery.nextAttemptAt !== dueAt || delivery.queued) return;
    if (delivery.status !== 'pending' && delivery.status !== 'retrying') return;
    this.enqueue(delivery);
  }

  private scheduleOrQueue(delivery: LiveDelivery): void {
    if (delivery.status !== 'pending' && delivery.status !== 'retrying') return;
    const dueAt = delivery.nextAttemptAt ?? 0;
    if (dueAt <= this.deps.clock.now()) this.enqueue(delivery);
    else this.deps.scheduler.schedule({ dueAt, projectId: this.projectId, deliveryId: delivery.id });
  }

  private enqueue(delivery: LiveDelivery): void {
    if (delivery.queued) return;
    delivery.queued = true;
    this.ready.push(delivery);
    this.pump();
  }

  /** Starts attempts while the endpoint is active and under its concurrency cap. */
  private pump(): void {
    if (this.webhook?.state !== 'active' || this.draining || this.deps.mayAct?.() === false) return;
    while (this.inflight < this.deps.endpointConcurrency && this.ready.length > 0) {
      const delivery = this.ready.shift()!;
      delivery.queued = false;
      if (delivery.status === 'pending' || delivery.status === 'retrying') this.startAttempt(delivery);
    }
  }

  private startAttempt(delivery: LiveDelivery): void {
    const webhook = this.webhook!;
    const startedAt = this.deps.clock.now();
    const envelope = delivery.envelope ?? this.deps.store.getEvent(this.projectId, delivery.eventId)?.envelope;
    this.step(delivery, 'START_ATTEMPT');
    this.inflight++;
    if (!envelope) {
      const error = 'the stored event is missing (pruned or corrupted)';
      this.finishAttempt(delivery, { ok: false, statusCode: null, durationMs: 0, error, errorCode: 'invalid_response', responseBody: '', retryAfterMs: null }, startedAt);
      return;
    }
    const timestamp = String(Math.floor(startedAt / 1000));
    const keys = this.currentSigningKeys(startedAt);
    const signature = formatSignatureHeader(keys.map((key) => nodeHmacBackend.sign(key, delivery.id, timestamp, envelope)));
    const headers = { 'webhook-id': delivery.id, 'webhook-timestamp': timestamp, 'webhook-signature': signature, 'user-agent': USER_AGENT };
    this.deps.sender
      .send({ url: webhook.callbackUrl, headers, body: envelope })
      .then((outcome) => this.finishAttempt(delivery, outcome, startedAt))
      .catch((error: unknown) => this.deps.logger.error({ err: error, projectId: this.projectId, deliveryId: delivery.id }, 'attempt bookkeeping failed'));
  }

  private finishAttempt(delivery: LiveDelivery, outcome: AttemptOutcome, startedAt: number): void {
    this.inflight--;
    const metrics = this.deps.metrics;
    metrics.attempts.inc({ outcome: outcome.ok ? 'success' : (outcome.errorCode ?? 'failure') });
    metrics.attemptSeconds.observe(outcome.durationMs / 1000);
    const event: DeliveryEventType = outcome.ok ? 'ATTEMPT_SUCCEEDED' : 'ATTEMPT_FAILED';
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: event })!;
    const attempt = {
      attempt: step.context.attempts,
      at: startedAt,
      statusCode: outcome.statusCode,
      durationMs: outcome.durationMs,
      error: outcome.error,
      errorCode: outcome.errorCode,
      responseBody: outcome.responseBody,
    };
    delivery.envelope = null;
    this.inBackground(this.apply(delivery, event, step, { attempt, outcome }), delivery.id);
    this.trackEndpointHealth(outcome.ok);
    if (this.inflight === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
    this.pump();
  }

  private step(delivery: LiveDelivery, event: DeliveryEventType): void {
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: event });
    if (!step) throw new HooklineError('HOOKLINE_ERR_INTERNAL', `delivery ${delivery.id}: ${event} is not allowed in ${delivery.status}`);
    this.inBackground(this.apply(delivery, event, step), delivery.id);
  }

  /**
   * Applies a machine step to the live delivery, runs its effects and persists it. The returned
   * promise resolves with the stored record once the change is committed; terminal deliveries
   * leave memory only then.
   */
  private apply(delivery: LiveDelivery, event: DeliveryEventType, step: DeliveryStep, attemptInfo?: { attempt: DeliveryRecord['attemptLog'][number]; outcome: AttemptOutcome }): Promise<DeliveryRecord | undefined> {
    const now = this.deps.clock.now();
    delivery.status = step.state;
    delivery.counters = step.context;
    delivery.nextAttemptAt = null;
    this.hold(delivery);
    this.runEffects(delivery, step.actions, now, attemptInfo?.outcome);
    if (step.state === 'pending') delivery.nextAttemptAt ??= now;
    const transitions: TransitionRecord[] = step.transitions.map((hop) => ({ from: hop.from, to: hop.to, event, at: now }));
    const committed = this.tracked(this.deps.store.applyDeliveryChange(this.projectId, delivery.id, {
      status: delivery.status,
      attempts: delivery.counters.attempts,
      roundAttempts: delivery.counters.roundAttempts,
      roundSize: delivery.counters.maxAttempts,
      nextAttemptAt: delivery.nextAttemptAt,
      updatedAt: now,
      transitions,
      ...(attemptInfo ? { attempt: attemptInfo.attempt } : {}),
    }));
    if (step.state === 'succeeded' || step.state === 'dead_lettered') {
      this.deps.metrics.deliveriesFinished.inc({ status: step.state });
      return committed.finally(() => {
        if (this.live.get(delivery.id) === delivery && delivery.status === step.state) this.release(delivery.id);
      });
    }
    if (step.state === 'pending' || step.state === 'retrying') this.scheduleOrQueue(delivery);
    return committed;
  }

  /** The actor is being dropped (its partition moved): its deliveries no longer count against the budget. */
  dropFromBudget(): void {
    this.deps.liveBudget.count -= this.live.size;
    this.live.clear();
  }

  private hold(delivery: LiveDelivery): void {
    if (!this.live.has(delivery.id)) this.deps.liveBudget.count++;
    this.live.set(delivery.id, delivery);
  }

  private release(deliveryId: string): void {
    if (this.live.delete(deliveryId)) this.deps.liveBudget.count--;
  }

  /** The machine's named effects, bound to this actor's scheduler and clock. */
  private runEffects(delivery: LiveDelivery, actions: readonly string[], now: number, outcome?: AttemptOutcome): void {
    for (const action of actions) {
      switch (action) {
        case 'scheduleRetry': {
          const schedule = this.deps.retrySchedule;
          const decision = decideRetry({ roundAttempts: Math.min(delivery.counters.roundAttempts, schedule.length - 1), schedule, outcome: outcome ?? {}, now, random: this.deps.random, jitter: this.deps.retryJitter });
          delivery.nextAttemptAt = decision.kind === 'retry' ? decision.dueAt : now;
          break;
        }
        case 'makeDueNow':
          delivery.nextAttemptAt = now;
          break;
        case 'startRound':
          delivery.counters = { ...delivery.counters, maxAttempts: this.deps.retrySchedule.length };
          delivery.nextAttemptAt = now;
          break;
        case 'recordDeadLetter':
          this.deps.logger.warn({ projectId: this.projectId, deliveryId: delivery.id, attempts: delivery.counters.attempts }, 'delivery dead-lettered');
          break;
        default:
          throw new HooklineError('HOOKLINE_ERR_INTERNAL', `no effect bound for machine action ${action}`);
      }
    }
  }

  private currentSigningKeys(now: number): Uint8Array[] {
    if (!this.signingKeys || now >= this.signingKeys.validUntil) {
      const { secrets, validUntil } = signingSecrets(this.webhook!, now);
      this.signingKeys = { keys: secretsToKeys(secrets), validUntil };
    }
    return this.signingKeys.keys;
  }

  /** Auto-disable: an endpoint whose every attempt failed for `disableAfterMs` goes `disabled`. */
  private trackEndpointHealth(succeeded: boolean): void {
    const webhook = this.webhook;
    if (!webhook) return;
    const now = this.deps.clock.now();
    if (succeeded) {
      if (webhook.failingSince !== null) this.inBackground(this.saveWebhook({ ...webhook, failingSince: null }));
      return;
    }
    if (webhook.failingSince === null) {
      this.inBackground(this.saveWebhook({ ...webhook, failingSince: now }));
      return;
    }
    if (now - webhook.failingSince < this.deps.disableAfterMs) return;
    const reason = `every attempt failed since ${new Date(webhook.failingSince).toISOString()}`;
    const disabled = disableWebhook(webhook, reason, now);
    if (!disabled) return;
    this.deps.logger.warn({ projectId: this.projectId, type: 'service.trigger.disabled', reason }, 'webhook endpoint disabled; PUT status "active" to resume (held deliveries are kept)');
    this.inBackground(this.saveWebhook(disabled));
  }

  /**
   * A write nobody waits for (state already changed in memory). A failure is logged, never thrown:
   * the delivery carries on from memory and its next write brings the record up to date.
   */
  private inBackground(write: Promise<unknown>, deliveryId?: string): void {
    write.catch((error: unknown) => this.deps.logger.error({ err: error, projectId: this.projectId, deliveryId }, 'could not persist a state change; it is kept in memory and written with the next change'));
  }

  // Shutdown ------------------------------------------------------------------------------------

  private tracked<T>(write: Promise<T>): Promise<T> {
    this.pendingWrites.add(write);
    const settle = () => this.pendingWrites.delete(write);
    write.then(settle, settle);
    return write;
  }

  /**
   * Stops starting attempts and resolves when none is in flight and the changes already made are
   * written (so a cluster node hands a partition on only after its last changes are replicated),
   * or when the deadline passes.
   */
  drain(deadlineMs: number): Promise<void> {
    this.draining = true;
    if (this.inflight === 0 && this.pendingWrites.size === 0) return Promise.resolve();
    const idle = new Promise<void>((resolve) => {
      if (this.inflight === 0) resolve();
      else this.idleWaiters.push(resolve);
    });
    const settled = idle.then(async () => {
      while (this.pendingWrites.size > 0) await Promise.allSettled([...this.pendingWrites]);
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs)));
    return Promise.race([settled, deadline]).finally(() => clearTimeout(timer));
  }
}
