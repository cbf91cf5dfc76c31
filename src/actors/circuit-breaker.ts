/**
 * The circuit breaker of one endpoint, decided apart from its effects (the endpoint's lifecycle
 * logs, counts and reports what it decides). Without it, each waiting delivery against a dead
 * endpoint made its own attempts on its own schedule: 5,000 waiting meant about 5,000 requests a
 * minute to a receiver that was down. Pure: the time is an argument.
 *
 * - `closed`: every due attempt is sent. Counted failures in a row (`consecutiveFailures`) are
 *   tallied; the `failureThreshold`-th opens the circuit.
 * - `open`: a due attempt is not sent (the lifecycle fails it fast, `CIRCUIT_OPEN`), except the
 *   first one due at or after `nextProbeAt`, which is sent as the probe and makes it `half_open`.
 * - `half_open`: the probe is in flight, and it alone: every other due attempt is failed fast.
 *   Its success (or any answer that shows the endpoint up) closes the circuit; its counted failure
 *   opens it again until `now + probeIntervalMs`, or the receiver's `Retry-After` if longer.
 *
 * Counted failures are the ones that say the endpoint is down or overloaded: no answer (refused,
 * reset, DNS, TLS, timeout, any network error), any 5xx and 429. Any other answer (a 3xx, a 4xx
 * but 429) shows the endpoint up and answering: it resets the count and closes the circuit, since
 * holding deliveries back would not help them. An attempt cancelled by Hookline itself (`aborted`,
 * a shutdown) says nothing about the endpoint.
 */

export const CIRCUIT_STATES = ['closed', 'open', 'half_open'] as const;
export type CircuitState = (typeof CIRCUIT_STATES)[number];

export interface Circuit {
  readonly state: CircuitState;
  /** Counted failures in a row, by any attempt that was sent (probes and stragglers included). */
  readonly consecutiveFailures: number;
  /** When the circuit opened (epoch ms); null while closed. A failed probe keeps it. */
  readonly openedAt: number | null;
  /** When a due attempt may be sent as the probe (epoch ms); null while closed. */
  readonly nextProbeAt: number | null;
  /** The delivery whose attempt is the probe in flight; null unless `half_open`. */
  readonly probeId: string | null;
}

export interface CircuitSettings {
  /** Counted failures in a row that open the circuit; 0 turns the breaker off. */
  readonly failureThreshold: number;
  /** Wait after an opening or a failed probe before the next probe. */
  readonly probeIntervalMs: number;
}

/** The longest `Retry-After` the probe wait honours: a receiver asking for days is probed hourly. */
export const MAX_PROBE_RETRY_AFTER_MS = 3_600_000;

export const CLOSED_CIRCUIT: Circuit = { state: 'closed', consecutiveFailures: 0, openedAt: null, nextProbeAt: null, probeId: null };

/** What an attempt's outcome must say for the breaker (an `AttemptOutcome` satisfies it). */
export interface CircuitOutcome {
  readonly ok: boolean;
  readonly statusCode: number | null;
  readonly errorCode: string | null;
  /** The receiver's `Retry-After` in ms; a floor on the wait before the next probe. */
  readonly retryAfterMs: number | null;
}

/** What to do with a due attempt: send it (as the probe, when the circuit was open), or fail it unsent. */
export type CircuitAdmission =
  | { readonly kind: 'send'; readonly circuit: Circuit }
  | { readonly kind: 'probe'; readonly circuit: Circuit }
  | { readonly kind: 'fail_fast' };

/** `opened`: it was closed and is open now; `closed`: it was open (or probing) and is closed now. */
export type CircuitChange = 'opened' | 'closed' | null;

const HTTP_TOO_MANY_REQUESTS = 429;

/** Whether the outcome says the endpoint is down or overloaded (see the module comment). */
export function isCountedFailure(outcome: CircuitOutcome): boolean {
  if (outcome.ok) return false;
  if (outcome.statusCode === null) return outcome.errorCode !== 'aborted';
  return outcome.statusCode >= 500 || outcome.statusCode === HTTP_TOO_MANY_REQUESTS;
}

/** Whether an attempt that has come due is sent, as a probe, or failed fast. */
export function admitAttempt(circuit: Circuit, deliveryId: string, now: number): CircuitAdmission {
  if (circuit.state === 'closed') return { kind: 'send', circuit };
  if (circuit.state === 'half_open' || now < (circuit.nextProbeAt ?? 0)) return { kind: 'fail_fast' };
  return { kind: 'probe', circuit: { ...circuit, state: 'half_open', probeId: deliveryId } };
}

/** The circuit after a sent attempt's outcome, and whether that opened or closed it. */
export function circuitAfter(circuit: Circuit, deliveryId: string, outcome: CircuitOutcome, now: number, settings: CircuitSettings): { circuit: Circuit; change: CircuitChange } {
  if (!outcome.ok && outcome.statusCode === null && outcome.errorCode === 'aborted') return { circuit: probeAbandoned(circuit, deliveryId), change: null };
  if (!isCountedFailure(outcome)) {
    return { circuit: CLOSED_CIRCUIT, change: circuit.state === 'closed' ? null : 'closed' };
  }
  const consecutiveFailures = circuit.consecutiveFailures + 1;
  const probeWait = Math.max(settings.probeIntervalMs, Math.min(outcome.retryAfterMs ?? 0, MAX_PROBE_RETRY_AFTER_MS));
  if (circuit.state === 'half_open' && circuit.probeId === deliveryId) {
    return { circuit: { ...circuit, state: 'open', consecutiveFailures, nextProbeAt: now + probeWait, probeId: null }, change: null };
  }
  if (circuit.state === 'closed') {
    if (settings.failureThreshold === 0 || consecutiveFailures < settings.failureThreshold) return { circuit: { ...circuit, consecutiveFailures }, change: null };
    return { circuit: { state: 'open', consecutiveFailures, openedAt: now, nextProbeAt: now + probeWait, probeId: null }, change: 'opened' };
  }
  // An attempt sent before the circuit opened, ending now: tallied, and its Retry-After heeded.
  const nextProbeAt = circuit.state === 'open' ? Math.max(circuit.nextProbeAt ?? now, now + Math.min(outcome.retryAfterMs ?? 0, MAX_PROBE_RETRY_AFTER_MS)) : circuit.nextProbeAt;
  return { circuit: { ...circuit, consecutiveFailures, nextProbeAt }, change: null };
}

/**
 * An operator asked for deliveries again (retry, redrive, replay): an open circuit probes with the
 * next due attempt instead of waiting out its interval, so that a fixed endpoint takes them at once
 * rather than failing them unsent until the next probe.
 */
export function probeNow(circuit: Circuit, now: number): Circuit {
  return circuit.state === 'open' && (circuit.nextProbeAt ?? 0) > now ? { ...circuit, nextProbeAt: now } : circuit;
}

/** The probe ended without an outcome (never sent, or cancelled): the next due attempt probes instead. */
export function probeAbandoned(circuit: Circuit, deliveryId: string): Circuit {
  return circuit.state === 'half_open' && circuit.probeId === deliveryId ? { ...circuit, state: 'open', probeId: null } : circuit;
}
