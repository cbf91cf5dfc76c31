/**
 * What the actors hand to the outcome publisher (HOOKLINE_NATS_OUTCOMES): a delivery's final
 * outcome once its step is stored, and each endpoint change raised as an operational event.
 */
import { isoTime } from '../iso-time.js';
import type { Outcome, OutcomeType } from '../sdk/outcomes.js';
import type { AttemptRecord } from '../store/records.js';
import type { OperationalEventData, OperationalEventType } from './operational-events.js';

/**
 * Publishes outcomes, best effort. Never rejects and never waits on the caller's path: resolves
 * false when the outcome could not be published (the caller counts it). `messageId` is the
 * JetStream de-duplication id (Nats-Msg-Id): the same outcome published twice is kept once.
 */
export interface OutcomeSink {
  publish(outcome: Outcome, messageId: string): Promise<boolean>;
}

/** An outcome and its de-duplication id, as the actors report it. */
export interface OutcomeReport {
  outcome: Outcome;
  messageId: string;
}

/** Publishes a report in the background: a publish never holds a delivery, and one given up is counted. */
export function publishInBackground(sink: OutcomeSink, countFailure: () => void): (report: OutcomeReport) => void {
  return (report) => void sink.publish(report.outcome, report.messageId).then((published) => published || countFailure());
}

export interface FinalDelivery {
  projectId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  createdAt: number;
  status: 'succeeded' | 'dead_lettered';
  attempts: number;
  attempt: AttemptRecord | undefined;
  at: number;
}

/**
 * A delivery's final outcome, and its message id `<deliveryId>.<type>.<attempts>`: the attempt
 * count over all rounds tells one round's outcome from the next (a redrive adds attempts).
 */
export function deliveryOutcome(final: FinalDelivery): OutcomeReport {
  const { attempt } = final;
  const outcome: Outcome = {
    version: 'v1',
    type: final.status,
    projectId: final.projectId,
    eventId: final.eventId,
    deliveryId: final.deliveryId,
    eventType: final.eventType,
    status: final.status,
    attempts: final.attempts,
    lastAttempt: attempt ? { statusCode: attempt.statusCode, error: attempt.error, errorCode: attempt.errorCode, at: isoTime(attempt.at) } : null,
    callbackUrl: null,
    createdAt: isoTime(final.createdAt),
    occurredAt: isoTime(final.at),
  };
  return { outcome, messageId: `${final.deliveryId}.${final.status}.${final.attempts}` };
}

/** The outcome types of the operational events that are endpoint changes, and the status each reports. */
const ENDPOINT_CHANGES: Partial<Record<OperationalEventType, { type: OutcomeType; status: string; at: string }>> = {
  'hookline.endpoint.disabled': { type: 'endpoint_disabled', status: 'disabled', at: 'disabledAt' },
  'hookline.endpoint.recovered': { type: 'endpoint_recovered', status: 'active', at: 'recoveredAt' },
  'hookline.endpoint.circuit_opened': { type: 'circuit_opened', status: 'open', at: 'openedAt' },
  'hookline.endpoint.circuit_closed': { type: 'circuit_closed', status: 'closed', at: 'closedAt' },
};

/**
 * The outcome of an operational event that is an endpoint change, and its message id
 * `<projectId>.<type>.<time>`; null for other events (a dead letter is published from its delivery).
 */
export function endpointOutcome<Type extends OperationalEventType>(type: Type, data: OperationalEventData[Type]): OutcomeReport | null {
  const change = ENDPOINT_CHANGES[type];
  if (!change) return null;
  const fields = data as Record<string, unknown>;
  const occurredAt = String(fields[change.at]);
  const outcome: Outcome = {
    version: 'v1',
    type: change.type,
    projectId: String(fields.projectId),
    eventId: null,
    deliveryId: null,
    eventType: null,
    status: change.status,
    attempts: null,
    lastAttempt: null,
    callbackUrl: String(fields.callbackUrl),
    createdAt: null,
    occurredAt,
  };
  return { outcome, messageId: `${outcome.projectId}.${change.type}.${Date.parse(occurredAt)}` };
}
