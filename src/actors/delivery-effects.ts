import { HooklineError } from '../errors.js';
import { isoTime } from '../iso-time.js';
import type { AttemptRecord } from '../store/records.js';
import type { Tracing } from '../tracing/tracing.js';
import type { AttemptOutcome } from '../transport/http-sender.js';
import { maskUrlCredentials } from '../transport/url-credentials.js';
import type { ProjectActorDeps, WebhookHolder } from './actor-deps.js';
import { endpointHealthAfter } from './endpoint-health.js';
import type { LiveDelivery } from './live-delivery.js';
import { identityOf } from './live-delivery.js';
import { projectOfStoreId } from './operational-events.js';
import type { OperationalNotify } from './operational-events.js';
import { deliveryOutcome } from './outcome-reports.js';
import type { RetryOutcome } from './retry-policy.js';
import { decideRetry } from './retry-policy.js';
import { retryScheduleOf } from './webhook-settings.js';

/** An attempt as its log keeps it: its number, when it started, and what came of it. */
export function attemptRecord(attempt: number, at: number, outcome: Pick<AttemptRecord, 'statusCode' | 'durationMs' | 'error' | 'errorCode' | 'responseBody'>): AttemptRecord {
  return { attempt, at, statusCode: outcome.statusCode, durationMs: outcome.durationMs, error: outcome.error, errorCode: outcome.errorCode, responseBody: outcome.responseBody };
}

/** A failed attempt in a few words: its error, else its HTTP status. */
function attemptFailure(attempt: AttemptRecord): string {
  return attempt.error ?? (attempt.statusCode !== null ? `HTTP ${attempt.statusCode}` : 'failed');
}

/**
 * What a delivery lifecycle's steps do beyond the delivery's own state, bound to the project's
 * settings and side effects: the delivery machine's named effects (`scheduleRetry`, `makeDueNow`,
 * `recordDeadLetter`; its `assign`s are the table's own) and an attempt's bearing on the endpoint's
 * health (disabled after failing for HOOKLINE_DISABLE_AFTER, or at a 410; recovered at a success).
 */
export class DeliveryEffects {
  constructor(
    private readonly projectId: string,
    private readonly deps: ProjectActorDeps,
    private readonly config: WebhookHolder,
    /** A write nobody waits for: its failure is logged (the lifecycle's). */
    private readonly inBackground: (write: Promise<unknown>) => void,
  ) {}

  /** Deliveries of operational events (to `operationalUrl`): theirs is the lifecycle without `notify`. */
  get isOperational(): boolean {
    return this.config.notify === undefined;
  }

  /** Counts a sent attempt's outcome: apart for operational deliveries, as the delivery log keeps them apart. */
  countAttempt(outcome: AttemptOutcome): void {
    const label = { outcome: outcome.ok ? 'success' : (outcome.errorCode ?? 'failure') };
    if (this.isOperational) {
      this.deps.metrics.operationalAttempts.inc(label);
      return;
    }
    this.deps.metrics.attempts.inc(label);
    this.deps.metrics.attemptSeconds.observe(outcome.durationMs / 1000);
  }

  /** Runs the machine's named actions of a step on the delivery (its due time, counters, dead-letter report). */
  run(delivery: LiveDelivery, actions: readonly string[], now: number, outcome?: RetryOutcome, attempt?: AttemptRecord): void {
    for (const action of actions) {
      switch (action) {
        case 'scheduleRetry': {
          // The configuration's schedule now: a delivery made before a PUT waits the PUT's delays.
          const schedule = retryScheduleOf(this.config.webhook(), this.deps.retrySchedule);
          const decision = decideRetry({ roundAttempts: Math.min(delivery.counters.roundAttempts, schedule.length - 1), schedule, outcome: outcome ?? {}, now, random: this.deps.random, jitter: this.deps.retryJitter });
          delivery.nextAttemptAt = decision.kind === 'retry' ? decision.dueAt : now;
          break;
        }
        case 'makeDueNow':
          delivery.nextAttemptAt = now;
          break;
        case 'recordDeadLetter': {
          // Why, as the delivery log's last attempt says it: an operator reading the log needs no API call.
          const why = { reason: attempt ? attemptFailure(attempt) : null, ...(attempt?.errorCode ? { errorCode: attempt.errorCode } : {}), ...(attempt?.statusCode ? { statusCode: attempt.statusCode } : {}) };
          if (this.isOperational) {
            // Its store id (`<project>~ops`) names no project, and no API shows the delivery: say what it is.
            this.deps.logger.warn({ projectId: projectOfStoreId(this.projectId), deliveryId: delivery.id, attempts: delivery.counters.attempts, ...why }, 'operational delivery dead-lettered (to operationalUrl; not in the delivery log)');
          } else {
            this.deps.logger.warn({ projectId: this.projectId, deliveryId: delivery.id, attempts: delivery.counters.attempts, ...why }, 'delivery dead-lettered');
          }
          if (this.deps.tracing) this.markDeadLetter(this.deps.tracing, delivery);
          if (this.config.notify) {
            const { eventId, eventType } = identityOf(this.deps.store, this.projectId, delivery);
            this.config.notify('hookline.delivery.dead_lettered', { projectId: this.projectId, deliveryId: delivery.id, eventId, eventType, attempts: delivery.counters.attempts, deadLetteredAt: isoTime(now) });
          }
          break;
        }
        default:
          throw new HooklineError('HOOKLINE_ERR_INTERNAL', `no effect bound for machine action ${action}`);
      }
    }
  }

  /**
   * A delivery's final step: counted, and with HOOKLINE_NATS_OUTCOMES its outcome published once
   * the step is `committed` (stored, and in a cluster in the changelog), as it is now: the delivery
   * may start another round meanwhile. A step whose commit failed is not published (best effort);
   * operational deliveries are not published.
   */
  finished(delivery: LiveDelivery, status: 'succeeded' | 'dead_lettered', attempt: AttemptRecord | undefined, now: number, committed: Promise<unknown>): void {
    (this.isOperational ? this.deps.metrics.operationalDeliveriesFinished : this.deps.metrics.deliveriesFinished).inc({ status });
    const publish = this.deps.publishOutcome;
    if (!publish || this.isOperational) return;
    const { eventId, eventType, createdAt } = identityOf(this.deps.store, this.projectId, delivery);
    const report = deliveryOutcome({ projectId: this.projectId, deliveryId: delivery.id, eventId, eventType, createdAt, status, attempts: delivery.counters.attempts, attempt, at: now });
    committed.then(() => publish(report), () => {});
  }

  /** Tracing on: the dead letter's span, in its event's trace. */
  private markDeadLetter(tracing: Tracing, delivery: LiveDelivery): void {
    const { eventId } = identityOf(this.deps.store, this.projectId, delivery);
    const parent = this.deps.store.getEvent(this.projectId, eventId)?.traceparent;
    tracing.mark('hookline.dead_letter', parent, { 'hookline.project_id': projectOfStoreId(this.projectId), 'hookline.event_id': eventId, 'hookline.delivery_id': delivery.id, 'hookline.attempts': delivery.counters.attempts });
  }

  /** Applies what the attempt's outcome does to the endpoint's health (endpoint-health.ts). */
  trackEndpointHealth(outcome: 'succeeded' | 'failed' | 'gone', notify: OperationalNotify): void {
    const webhook = this.config.webhook();
    if (!webhook) return;
    const now = this.deps.clock.now();
    const change = endpointHealthAfter(webhook, outcome, now, this.deps.disableAfterMs);
    if (change.kind === 'unchanged') return;
    this.inBackground(this.config.save(change.webhook));
    this.deps.tracing?.mark(`hookline.endpoint.${change.kind}`, undefined, { 'hookline.project_id': this.projectId });
    // The operational URL may be another party's: the endpoint's password is not theirs to read.
    const callbackUrl = maskUrlCredentials(webhook.callbackUrl);
    if (change.kind === 'recovered') notify('hookline.endpoint.recovered', { projectId: this.projectId, callbackUrl, recoveredAt: isoTime(now) });
    if (change.kind === 'disabled') {
      const { reason } = change;
      this.deps.logger.warn({ projectId: this.projectId, type: 'service.trigger.disabled', callbackUrl, reason }, 'webhook endpoint disabled; PUT status "active" to resume (held deliveries are kept)');
      notify('hookline.endpoint.disabled', { projectId: this.projectId, callbackUrl, reason, disabledAt: isoTime(now) });
    }
  }
}
