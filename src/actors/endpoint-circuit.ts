import { isoTime } from '../iso-time.js';
import { maskUrlCredentials } from '../transport/url-credentials.js';
import type { AttemptOutcome } from '../transport/http-sender.js';
import type { ProjectActorDeps, WebhookHolder } from './actor-deps.js';
import type { Circuit, CircuitChange, CircuitSettings } from './circuit-breaker.js';
import { CLOSED_CIRCUIT, admitAttempt, circuitAfter, probeAbandoned, probeNow } from './circuit-breaker.js';
import type { OperationalNotify } from './operational-events.js';

/**
 * The project endpoint's circuit breaker (circuit-breaker.ts decides) with its effects bound: the
 * log lines, the metrics and the operational events of an opening and a closing. In memory only: a
 * restart, or a new owner of the partition in a cluster, starts it closed, and the first
 * `HOOKLINE_CIRCUIT_FAILURES` failures there open it again.
 */
export class EndpointCircuit {
  private circuit: Circuit = CLOSED_CIRCUIT;
  private readonly settings: CircuitSettings;

  constructor(
    private readonly projectId: string,
    private readonly deps: Pick<ProjectActorDeps, 'metrics' | 'logger' | 'circuitFailures' | 'circuitProbeIntervalMs' | 'tracing'>,
    private readonly config: Pick<WebhookHolder, 'webhook'>,
    private readonly notify: OperationalNotify,
  ) {
    this.settings = { failureThreshold: deps.circuitFailures, probeIntervalMs: deps.circuitProbeIntervalMs };
  }

  get state(): Circuit {
    return this.circuit;
  }

  get isOpen(): boolean {
    return this.circuit.state !== 'closed';
  }

  /**
   * Whether the due attempt of `deliveryId` may be sent now (the probe included); when not, why it
   * is failed unsent, as its attempt log says.
   */
  admit(deliveryId: string, now: number): { send: true } | { send: false; reason: string } {
    const admission = admitAttempt(this.circuit, deliveryId, now);
    if (admission.kind !== 'fail_fast') {
      this.circuit = admission.circuit;
      return { send: true };
    }
    const { consecutiveFailures, openedAt, nextProbeAt, state } = this.circuit;
    const next = state === 'half_open' ? 'a probe is in flight' : `next probe at ${isoTime(nextProbeAt!)}`;
    return { send: false, reason: `not sent: the endpoint's circuit is open after ${consecutiveFailures} consecutive failures (since ${isoTime(openedAt!)}); ${next}` };
  }

  /** A sent attempt ended with `outcome`. */
  attemptEnded(deliveryId: string, outcome: AttemptOutcome, now: number): void {
    const before = this.circuit;
    const { circuit, change } = circuitAfter(before, deliveryId, outcome, now, this.settings);
    this.circuit = circuit;
    this.changed(change, before, now, outcome.error);
  }

  /** An operator asked for deliveries again: an open circuit probes with the next due attempt (`probeNow`). */
  probeNow(now: number): void {
    this.circuit = probeNow(this.circuit, now);
  }

  /** A started attempt was never sent (cluster: its start could not be recorded). */
  notSent(deliveryId: string): void {
    this.circuit = probeAbandoned(this.circuit, deliveryId);
  }

  /** The webhook was configured (PUT): whatever failed before, the next attempts are sent. */
  reset(now: number): void {
    const before = this.circuit;
    this.circuit = CLOSED_CIRCUIT;
    this.changed(before.state === 'closed' ? null : 'closed', before, now, 'the webhook was configured again');
  }

  private changed(change: CircuitChange, before: Circuit, now: number, why: string | null): void {
    if (change === null) return;
    this.deps.metrics.circuitTransitions.inc({ to: change === 'opened' ? 'open' : 'closed' });
    this.deps.tracing?.mark(`hookline.circuit.${change}`, undefined, { 'hookline.project_id': this.projectId, 'hookline.consecutive_failures': this.circuit.consecutiveFailures });
    // The operational URL may be another party's: the endpoint's password is not theirs to read.
    const callbackUrl = maskUrlCredentials(this.config.webhook()?.callbackUrl ?? '');
    if (change === 'opened') {
      const { consecutiveFailures, openedAt, nextProbeAt } = this.circuit;
      this.deps.logger.warn(
        { projectId: this.projectId, callbackUrl, consecutiveFailures, lastError: why, nextProbeAt: isoTime(nextProbeAt!) },
        'endpoint circuit opened: due attempts are failed unsent (errorCode circuit_open) while one probe at a time tests the endpoint',
      );
      this.notify('hookline.endpoint.circuit_opened', { projectId: this.projectId, callbackUrl, consecutiveFailures, openedAt: isoTime(openedAt!), nextProbeAt: isoTime(nextProbeAt!) });
      return;
    }
    this.deps.logger.info({ projectId: this.projectId, callbackUrl, openedAt: isoTime(before.openedAt!), why }, 'endpoint circuit closed: due attempts are sent again');
    this.notify('hookline.endpoint.circuit_closed', { projectId: this.projectId, callbackUrl, openedAt: isoTime(before.openedAt!), closedAt: isoTime(now) });
  }
}
