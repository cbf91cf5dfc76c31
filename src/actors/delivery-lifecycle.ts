import { HooklineError } from '../errors.js';
import { deliveryTable, isTerminalDelivery } from '../machines/index.js';
import type { DeliveryEventType, DeliveryStatus, DeliveryStep } from '../machines/index.js';
import type { WaitingEntry } from '../store/delivery-tables.js';
import type { AttemptRecord, DeliveryChange, DeliveryHead, TransitionRecord, WebhookRecord } from '../store/records.js';
import type { AttemptOutcome } from '../transport/http-sender.js';
import { traceAttempt } from '../tracing/attempt-trace.js';
import type { RetryOutcome } from './retry-policy.js';
import type { ProjectActorDeps, WebhookHolder } from './actor-deps.js';
import { AttemptRequests } from './attempt-request.js';
import { DeliveryEffects, attemptRecord } from './delivery-effects.js';
import { DeliveryWindow, DUE_HORIZON_MS } from './delivery-window.js';
import { DeliveryWriter } from './delivery-writer.js';
import { EndpointCircuit } from './endpoint-circuit.js';
import { EndpointPacer } from './endpoint-pacing.js';
import { LifecycleDrain } from './lifecycle-drain.js';
import { LiveIndex } from './live-index.js';
import type { LiveDelivery } from './live-delivery.js';
import { NO_STEPS, changeOf, identityOf, liveFromHead, liveFromSchedule } from './live-delivery.js';
import { unrecordedStartWaitMs } from './retry-policy.js';
import { ReadyLine } from './ready-line.js';

/**
 * The lifecycle of one project's live deliveries: due times, attempts under the endpoint's
 * concurrency cap, machine steps and their effects, and the writes behind them. Which due delivery
 * goes next is the ready line's (ready-line.ts); what a drain waits for, the drain's
 * (lifecycle-drain.ts). The project's actor (`ProjectActor`) owns one and brings deliveries to it
 * (ingest, restart, retry, redrive, replay).
 *
 * A live delivery moves on the compiled delivery table (the XState machine, without its per-step
 * cost). The table names effects (`scheduleRetry`, `makeDueNow`, `recordDeadLetter`);
 * `runEffects` gives them meaning here. Every handler changes state synchronously before its first
 * `await`, so handlers never interleave halfway through a change. A delivery in memory stays there
 * until its latest step is committed, so anything not in memory can be read from LMDB as it is;
 * which waiting deliveries are in memory at all is the window's (delivery-window.ts): the rest wait
 * on disk, and memory does not grow with a backlog.
 */

/** The statuses of a delivery not yet final: it waits, held in memory or on disk. */
export const WAITING_STATUSES = ['pending', 'delivering', 'retrying'] as const;

/**
 * Attempts one `pump` starts (or fails unsent) before it lets the event loop serve others; in a
 * deferred turn (work-turns.ts) it also stops when the turn's time slice is spent.
 */
const PUMP_TURN = 256;

const HTTP_GONE = 410;
/**
 * A failed-fast attempt's next one is at least 1 ms later: due at once, it would be failed again
 * within the same pump, recursing through a zero-delay schedule's round.
 */
const FAILED_FAST: RetryOutcome = { retryAfterMs: 1 };

export class DeliveryLifecycle {
  private readonly live = new LiveIndex<LiveDelivery>();
  private readonly line: ReadyLine;
  /** Deliveries whose attempt is in flight. */
  private readonly attempting = new Set<LiveDelivery>();
  private readonly requests = new AttemptRequests();
  private readonly writer: DeliveryWriter;
  private readonly drainer: LifecycleDrain;
  /** What the machine's named actions and an attempt's outcome do beyond the delivery (delivery-effects.ts). */
  private readonly effects: DeliveryEffects;
  /** The webhook's `maxConcurrency` and `rateLimitPerSecond` (endpoint-pacing.ts). */
  private readonly pacer: EndpointPacer;
  private pumpQueued = false;
  /** Starts that could not be recorded since the last one that was (the restart's backoff). */
  private unrecordedStarts = 0;
  /** Which waiting deliveries are held in memory; the rest wait on disk (delivery-window.ts). */
  private readonly window: DeliveryWindow;
  /** Deliveries not yet final, held or on disk: what HOOKLINE_MAX_WAITING_PER_PROJECT bounds. */
  private waitingCount: number;
  /**
   * Settles once the deliveries waiting on disk when this lifecycle began are all in `waiting`: a
   * large backlog is counted in turns after the start, and admission counts what is counted so far.
   */
  readonly counted: Promise<void>;
  /** The endpoint's circuit breaker; none for operational deliveries, which govern no endpoint. */
  readonly circuit: EndpointCircuit | null;

  constructor(
    readonly projectId: string,
    private readonly deps: ProjectActorDeps,
    private readonly config: WebhookHolder,
  ) {
    this.writer = new DeliveryWriter(projectId, deps.store, deps.clock, (delivery) => this.written(delivery), deps.turns);
    this.line = new ReadyLine(this.live, config.webhook()?.ordering ?? 'unordered', () => this.pump());
    // Out of time (steps still failing to commit): stop writing before the store closes.
    this.drainer = new LifecycleDrain(this.attempting, () => this.writer.abandon());
    this.effects = new DeliveryEffects(projectId, deps, config, (write) => this.inBackground(write));
    this.window = new DeliveryWindow(projectId, deps.store, deps.clock, deps.turns, deps.deliveryWindow, this.live, this.line, {
      load: (entry) => this.loadFromDisk(entry),
      onError: (error) => deps.logger.error({ err: error, projectId }, 'could not remove stale due index entries; they are skipped when read'),
    });
    // Counted in turns from one snapshot (millions take seconds): changes made since add to it as they happen.
    const { counted, rest } = deps.store.deliveryTables.countInStatusesInTurns(projectId, WAITING_STATUSES);
    this.waitingCount = counted;
    this.counted = rest
      ? rest.then(
          (more) => void (this.waitingCount += more),
          // A stop during the count closes the store under it: expected then, not worth a warning.
          (error: unknown) => void (deps.nodeStopping() || deps.logger.warn({ err: error, projectId }, 'could not finish counting the waiting deliveries on disk')),
        )
      : Promise.resolve();
    this.pacer = new EndpointPacer(deps.clock, deps.endpointConcurrency, () => this.pump());
    this.pacer.configure(config.webhook());
    this.circuit = config.notify ? new EndpointCircuit(projectId, deps, config, config.notify) : null;
  }

  /** Deliveries held in memory (waiting, and final ones whose last step is still being written). */
  get liveCount(): number {
    return this.live.size;
  }

  /** Deliveries not yet final, held in memory or waiting on disk. */
  get waiting(): number {
    return this.waitingCount;
  }

  get readyCount(): number {
    return this.line.length;
  }

  get isDraining(): boolean {
    return this.drainer.isDraining;
  }

  get(deliveryId: string): LiveDelivery | undefined {
    return this.live.get(deliveryId);
  }

  /** Steps of a live delivery made in memory and not yet stored (a read shows them). */
  unwrittenChanges(deliveryId: string): DeliveryChange[] {
    return this.live.get(deliveryId)?.unwritten.map((step) => step.change) ?? [];
  }

  /**
   * Each live delivery whose status in memory is not yet the stored one, as stored and as shown (for
   * counts by status): an attempt in flight, and an outcome whose commit has not landed yet.
   */
  *statusesNotStored(): Generator<{ id: string; shown: DeliveryStatus }> {
    for (const delivery of this.live.values()) if (delivery.status !== delivery.storedStatus) yield { id: delivery.id, shown: delivery.status };
  }

  /** The configuration changed: signing keys are derived again, held attempts may start. */
  configurationChanged(): void {
    this.requests.forgetKeys();
    const ordered = this.line.ordered;
    this.line.setOrdering(this.config.webhook()?.ordering ?? 'unordered');
    if (this.line.ordered !== ordered) this.window.reorder();
    this.pacer.configure(this.config.webhook());
    this.pump();
  }

  /**
   * A new delivery, committed: into memory and onto the ready queue or the scheduler, or left on
   * disk when the window is full or older ones wait there (the window reads it back in turn).
   */
  admit(head: DeliveryHead, envelope: Uint8Array | null): void {
    this.waitingCount++;
    if (!this.window.mayHoldNew()) {
      this.window.unheld(head.id, head.status, head.nextAttemptAt);
      return;
    }
    const delivery = liveFromHead(head, envelope);
    this.hold(delivery);
    this.scheduleOrQueue(delivery);
  }

  /** At start, or when this node takes the project's partition over: the waiting deliveries are read from disk into the window. */
  startFromDisk(): void {
    this.window.startFromDisk();
  }

  /**
   * Takes a waiting delivery read from disk into memory (cheapest in ascending id order, as a
   * restart reads them). One caught mid-attempt (stored `delivering`) is attempted again.
   */
  private loadFromDisk({ id, status, schedule }: WaitingEntry): void {
    if (this.live.get(id)) return;
    const delivery = liveFromSchedule(id, status, schedule);
    this.line.resumed();
    this.hold(delivery, true);
    this.scheduleOrQueue(delivery);
    // The stored status decides: a due `pending`/`retrying` delivery is already `delivering` again
    // here, its new attempt started by `scheduleOrQueue`, and must not be taken for an interrupted one.
    if (status === 'delivering') this.step(delivery, 'ATTEMPT_INTERRUPTED');
  }

  /** Due time reached (from the scheduler). Stale entries (rescheduled since) are ignored. */
  onDue(deliveryId: string, dueAt: number): void {
    const delivery = this.live.get(deliveryId);
    if (!delivery || delivery.nextAttemptAt !== dueAt || delivery.queued) return;
    if (delivery.status !== 'pending' && delivery.status !== 'retrying') return;
    // Deferred to a turn (work-turns.ts): a timer may find thousands due at once, of one project.
    if (this.line.add(delivery)) this.pumpNextTurn();
  }

  private scheduleOrQueue(delivery: LiveDelivery): void {
    if (delivery.status !== 'pending' && delivery.status !== 'retrying') return;
    const dueAt = delivery.nextAttemptAt ?? 0;
    const now = this.deps.clock.now();
    // Retrying and due beyond the horizon: it leaves memory once its step is stored (`evictIfIdle`),
    // and the window reads it back by the due index in time; the heap holds only what is due soon.
    // A pending one (found on disk by id, not by time) and an ordered one stay in the heap.
    delivery.dueOnDisk = delivery.status === 'retrying' && dueAt > now + DUE_HORIZON_MS && !this.line.ordered;
    if (dueAt <= now) this.enqueue(delivery);
    else if (!delivery.dueOnDisk) this.deps.scheduler.schedule(dueAt, this.projectId, delivery.id);
  }

  private enqueue(delivery: LiveDelivery): void {
    if (this.line.add(delivery)) this.pump();
  }

  /** Starts attempts while the endpoint is active and its pacer allows (one, the line's head, when ordered). */
  pump(): void {
    if (this.config.webhook()?.state !== 'active' || this.drainer.isDraining || this.deps.mayAct?.() === false) return;
    if (this.line.ordered) {
      const head = this.attempting.size > 0 || !this.pacer.mayStart(0) ? undefined : this.line.takeHead();
      if (head) {
        this.pacer.started();
        this.startAttempt(head);
      }
      return;
    }
    let started = 0;
    while (this.line.length > 0 && this.pacer.mayStart(this.attempting.size)) {
      // A turn's worth started (attempts failed unsent under an open circuit take no slot, so a
      // window of them would otherwise run in one go), or the deferred turn's slice is spent, also
      // before the first (a refill's loads each call this): the rest after other projects' turns.
      if (started++ === PUMP_TURN || this.deps.turns.spent()) return this.pumpNextTurn();
      const delivery = this.line.shift()!;
      // One that left memory while due (over the window) is skipped: the window reads it back.
      if ((delivery.status !== 'pending' && delivery.status !== 'retrying') || this.live.get(delivery.id) !== delivery) continue;
      this.pacer.started();
      this.startAttempt(delivery);
    }
  }

  /** Pumps again in a later turn of the node's deferred work, once however often asked. */
  private pumpNextTurn(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    this.deps.turns.request(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  private startAttempt(delivery: LiveDelivery): void {
    const webhook = this.config.webhook()!;
    const startedAt = this.deps.clock.now();
    const admitted = this.circuit?.admit(delivery.id, startedAt);
    if (admitted?.send === false) return this.failFast(delivery, admitted.reason, startedAt);
    const envelope = delivery.envelope ?? this.deps.store.getEvent(this.projectId, identityOf(this.deps.store, this.projectId, delivery).eventId)?.envelope;
    const started = this.step(delivery, 'START_ATTEMPT');
    this.attempting.add(delivery);
    if (!envelope) {
      const error = 'the stored event is missing (pruned or corrupted)';
      this.finishAttempt(delivery, { ok: false, statusCode: null, durationMs: 0, error, errorCode: 'invalid_response', responseBody: '', retryAfterMs: null }, startedAt);
      return;
    }
    // A cluster node sends only once the start is in the changelog: the partition's next owner must
    // know that an attempt may have reached the receiver, to log it as interrupted (a kill -9 between
    // the send and the append lost that record). A start that could not be recorded is not sent
    // (NATS is unreachable, and the lease may be gone with it): the attempt counts as interrupted
    // and is made again, by this node or the next owner. Either way the start is committed to LMDB
    // with the outcome (delivery-writer.ts): a restart attempts a `delivering` delivery again anyway,
    // and a cluster node's restart restores the partition, the start with it, from the changelog.
    if (this.deps.store.replicator) {
      const held = () => this.live.get(delivery.id) === delivery;
      started.then(
        () => {
          this.unrecordedStarts = 0;
          if (held()) this.send(delivery, webhook, envelope, startedAt);
          else this.notSent(delivery, false);
        },
        () => this.notSent(delivery, held()),
      );
      return;
    }
    this.send(delivery, webhook, envelope, startedAt);
  }

  /** An attempt that was never sent: given up to the next owner (dropped), or interrupted here to be made again after a backoff. */
  private notSent(delivery: LiveDelivery, stillHeld: boolean): void {
    this.attempting.delete(delivery);
    this.circuit?.notSent(delivery.id);
    if (stillHeld && delivery.status === 'delivering') {
      const waitMs = unrecordedStartWaitMs(this.unrecordedStarts);
      this.unrecordedStarts++;
      this.step(delivery, 'ATTEMPT_INTERRUPTED', this.deps.clock.now() + waitMs);
    }
    this.drainer.wakeIfIdle();
  }

  private send(delivery: LiveDelivery, webhook: WebhookRecord, envelope: Uint8Array, startedAt: number): void {
    const request = this.requests.build(webhook, () => this.config.webhook() ?? webhook, delivery.id, envelope, () => this.deps.clock.now());
    const tracing = this.deps.tracing;
    const traced = tracing && traceAttempt(tracing, this.deps.store, { storeId: this.projectId, eventId: identityOf(this.deps.store, this.projectId, delivery).eventId, deliveryId: delivery.id, attempt: delivery.counters.attempts + 1 }, webhook, request);
    this.deps.sender
      .send(traced ? traced.request : request)
      .then((outcome) => {
        traced?.span.end(outcome);
        this.finishAttempt(delivery, outcome, startedAt);
      })
      .catch((error: unknown) => this.deps.logger.error({ err: error, projectId: this.projectId, deliveryId: delivery.id }, 'attempt bookkeeping failed'));
  }

  /**
   * The due attempt under an open circuit: not sent, failed at once (`CIRCUIT_OPEN`), so that the
   * retry schedule still decides when the delivery dead-letters while the receiver gets only
   * probes. It counts toward neither the endpoint's health nor the circuit's failures.
   */
  private failFast(delivery: LiveDelivery, reason: string, now: number): void {
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: 'CIRCUIT_OPEN' })!;
    const attempt = attemptRecord(step.context.attempts, now, { statusCode: null, durationMs: 0, error: reason, errorCode: 'circuit_open', responseBody: '' });
    this.deps.metrics.attempts.inc({ outcome: 'circuit_open' });
    delivery.envelope = null;
    this.inBackground(this.apply(delivery, 'CIRCUIT_OPEN', step, { attemptInfo: { attempt, outcome: FAILED_FAST } }), delivery.id);
  }

  private finishAttempt(delivery: LiveDelivery, outcome: AttemptOutcome, startedAt: number): void {
    this.attempting.delete(delivery);
    this.circuit?.attemptEnded(delivery.id, outcome, this.deps.clock.now());
    this.effects.countAttempt(outcome);
    // 410 Gone disables the endpoint before the step, so that the delivery is held with the others
    // rather than retried or dead-lettered. Operational deliveries (no `notify`) govern no endpoint.
    const gone = outcome.statusCode === HTTP_GONE && this.config.notify !== undefined;
    if (this.config.notify) this.effects.trackEndpointHealth(outcome.ok ? 'succeeded' : gone ? 'gone' : 'failed', this.config.notify);
    const event: DeliveryEventType = outcome.ok ? 'ATTEMPT_SUCCEEDED' : gone ? 'ATTEMPT_GONE' : 'ATTEMPT_FAILED';
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: event })!;
    const attempt = attemptRecord(step.context.attempts, startedAt, outcome);
    delivery.envelope = null;
    this.inBackground(this.apply(delivery, event, step, { attemptInfo: { attempt, outcome } }), delivery.id);
    this.drainer.wakeIfIdle();
    this.pump();
  }

  /** Takes the delivery through `event`, which the machine must allow in its state; `dueAt` as in `apply`. */
  step(delivery: LiveDelivery, event: DeliveryEventType, dueAt?: number): Promise<DeliveryChange> {
    const step = deliveryTable.next(delivery.status, delivery.counters, { type: event });
    if (!step) throw new HooklineError('HOOKLINE_ERR_INTERNAL', `delivery ${delivery.id}: ${event} is not allowed in ${delivery.status}`);
    const committed = this.apply(delivery, event, step, dueAt === undefined ? {} : { dueAt });
    this.inBackground(committed, delivery.id);
    return committed;
  }

  /**
   * Applies a machine step to the delivery, runs its effects and queues it for writing. Resolves
   * with the change once it is committed; terminal deliveries leave memory only then. A step to
   * `pending` makes the delivery due at `dueAt`, by default now.
   */
  apply(delivery: LiveDelivery, event: DeliveryEventType, step: DeliveryStep, details: { attemptInfo?: { attempt: AttemptRecord; outcome: RetryOutcome }; dueAt?: number } = {}): Promise<DeliveryChange> {
    const { attemptInfo } = details;
    const now = this.deps.clock.now();
    // An operator's retry or redrive: an open circuit probes now rather than failing it unsent.
    if (event === 'RETRY' || event === 'REDRIVE') this.circuit?.probeNow(now);
    const wasFinal = isTerminalDelivery(delivery.status);
    if (wasFinal !== isTerminalDelivery(step.state)) this.waitingCount += wasFinal ? 1 : -1;
    // A new round (retry, redrive) joins the ordered line at its tail, also when the dead letter is
    // still held (its last step being written): held, it kept its old place ahead of later ones.
    if (wasFinal && !isTerminalDelivery(step.state)) this.release(delivery.id);
    delivery.status = step.state;
    delivery.counters = step.context;
    delivery.nextAttemptAt = null;
    this.hold(delivery);
    this.effects.run(delivery, step.actions, now, attemptInfo?.outcome, attemptInfo?.attempt);
    if (step.state === 'pending') delivery.nextAttemptAt ??= details.dueAt ?? now;
    const transitions: TransitionRecord[] = step.transitions.map((hop) => ({ from: hop.from, to: hop.to, event, at: now }));
    const change = changeOf(delivery, transitions, now, attemptInfo?.attempt);
    delivery.transitionCount += transitions.length;
    if (attemptInfo) delivery.attemptCount++;
    if (delivery.unwritten === NO_STEPS) delivery.unwritten = [];
    const committed = new Promise<DeliveryChange>((resolve, reject) => delivery.unwritten.push({ change, waiter: { resolve: () => resolve(change), reject } }));
    const writing = this.writer.start(delivery);
    if (writing) this.drainer.tracked(writing);
    if (step.state === 'succeeded' || step.state === 'dead_lettered') this.effects.finished(delivery, step.state, attemptInfo?.attempt, now, committed);
    if (step.state === 'pending' || step.state === 'retrying') this.scheduleOrQueue(delivery);
    return committed;
  }

  /** A writer stopped: a terminal delivery whose steps are all stored leaves memory, and so may a waiting one (`evictIfIdle`). */
  private written(delivery: LiveDelivery): void {
    if (this.live.get(delivery.id) !== delivery || delivery.unwritten.length > 0) return;
    if (delivery.status === 'succeeded' || delivery.status === 'dead_lettered') this.release(delivery.id);
    else this.evictIfIdle(delivery);
  }

  /**
   * A waiting delivery with nothing in flight and every step stored leaves memory for the disk
   * when it was not due within the horizon when scheduled (`dueOnDisk`), or when the window holds
   * more than its size (a retry, redrive or interrupted attempt brings deliveries in past it). The
   * window reads it back in turn. Ordered delivery keeps its line in memory: its head must be the oldest.
   */
  private evictIfIdle(delivery: LiveDelivery): void {
    if ((delivery.status !== 'pending' && delivery.status !== 'retrying') || delivery.writing || this.attempting.has(delivery) || this.line.ordered) return;
    if (!delivery.dueOnDisk && this.live.size <= this.window.size) return;
    if (delivery.queued) this.line.forget(delivery);
    this.release(delivery.id);
    this.window.unheld(delivery.id, delivery.status, delivery.nextAttemptAt);
  }

  /** The actor is being dropped (its partition moved): its deliveries leave memory, on disk for the next owner. */
  dropFromMemory(): void {
    this.writer.abandon();
    this.window.stop();
    this.deps.heldDeliveries.count -= this.live.size;
    this.live.clear();
  }

  private hold(delivery: LiveDelivery, resumed = false): void {
    if (resumed ? this.live.resume(delivery) : this.live.set(delivery.id, delivery)) this.deps.heldDeliveries.count++;
  }

  private release(deliveryId: string): void {
    if (!this.live.delete(deliveryId)) return;
    this.deps.heldDeliveries.count--;
    this.window.requestRefill();
  }

  /**
   * A write nobody waits for (state already changed in memory). A failure is logged, never thrown:
   * the delivery carries on from memory while its writer writes the step again; the webhook's
   * next write (a whole record) brings it up to date.
   */
  private inBackground(write: Promise<unknown>, deliveryId?: string): void {
    const message = deliveryId === undefined ? 'could not persist a webhook change; it is kept in memory and written with the next change' : 'could not persist a delivery step; it is kept in memory and written again until it is stored';
    write.catch((error: unknown) => this.deps.logger.error({ err: error, projectId: this.projectId, deliveryId }, message));
  }

  // Shutdown ------------------------------------------------------------------------------------

  /** Counts a write until it settles, so that a drain waits for it. */
  tracked<T>(write: Promise<T>): Promise<T> {
    return this.drainer.tracked(write);
  }

  /** Stops starting attempts; resolves once none is in flight and the tracked writes settled, or at the deadline (lifecycle-drain.ts). */
  drain(deadlineMs: number): Promise<void> {
    // Nothing more is read from disk: the store closes after the drain.
    this.window.stop();
    return this.drainer.drain(deadlineMs);
  }
}
