import { formatRetrySchedule } from '../config/duration.js';
import { isoTime } from '../iso-time.js';
import type { Circuit } from '../actors/circuit-breaker.js';
import type { Webhook } from '../actors/webhook-settings.js';
import type { DeliveryRecord, EventRecord } from '../store/records.js';
import type { DeliveryDetailResponse, DeliveryResponse, StoredEventResponse, WebhookConfigResponse } from './response-schemas.js';

type MachineState = DeliveryDetailResponse['transitions'][number]['to'];

const isoOrNull = (ms: number | null) => (ms === null ? null : isoTime(ms));

export function presentWebhook(webhook: Webhook, circuit: Circuit): WebhookConfigResponse {
  return {
    callbackUrl: webhook.callbackUrl,
    status: webhook.state,
    eventTypes: webhook.eventTypes,
    disabledReason: webhook.state === 'disabled' ? webhook.disabledReason : null,
    headers: webhook.headers,
    filter: webhook.filter,
    ordering: webhook.ordering,
    operationalUrl: webhook.operationalUrl,
    maxConcurrency: webhook.maxConcurrency,
    rateLimitPerSecond: webhook.rateLimitPerSecond,
    retrySchedule: webhook.retrySchedule === null ? null : formatRetrySchedule(webhook.retrySchedule),
    sendTraceparent: webhook.sendTraceparent,
    circuit: { state: circuit.state, consecutiveFailures: circuit.consecutiveFailures, openedAt: isoOrNull(circuit.openedAt), nextProbeAt: isoOrNull(circuit.nextProbeAt) },
    createdAt: isoTime(webhook.createdAt),
    updatedAt: isoTime(webhook.updatedAt),
  };
}

/** A delivery in the log: `maxAttempts` is where this round dead-letters, counted like `attempts`. */
export function presentDelivery(record: DeliveryRecord): DeliveryResponse {
  const last = record.attemptLog[record.attemptLog.length - 1];
  return {
    id: record.id,
    eventId: record.eventId,
    eventType: record.eventType,
    status: record.status,
    attempts: record.attempts,
    maxAttempts: record.attempts - record.roundAttempts + record.roundSize,
    nextAttemptAt: isoOrNull(record.nextAttemptAt),
    createdAt: isoTime(record.createdAt),
    updatedAt: isoTime(record.updatedAt),
    lastAttempt: last ? { at: isoTime(last.at), statusCode: last.statusCode, durationMs: last.durationMs, error: last.error } : null,
  };
}

export function presentDeliveryDetail(record: DeliveryRecord): DeliveryDetailResponse {
  return {
    ...presentDelivery(record),
    attemptLog: record.attemptLog.map((attempt) => ({
      attempt: attempt.attempt,
      at: isoTime(attempt.at),
      statusCode: attempt.statusCode,
      durationMs: attempt.durationMs,
      error: attempt.error,
      errorCode: attempt.errorCode,
      responseBody: attempt.responseBody,
    })),
    // The store keeps states as plain strings; they are the delivery machine's, which the API
    // schema lists (and the integration tests check every real answer against it).
    transitions: record.transitions.map((transition) => ({ from: transition.from as MachineState | null, to: transition.to as MachineState, event: transition.event, at: isoTime(transition.at) })),
  };
}

/** A stored event: its envelope both parsed and as the exact text that is signed and sent. */
export function presentStoredEvent(record: EventRecord): StoredEventResponse {
  const body = Buffer.from(record.envelope).toString('utf8');
  return { id: record.id, type: record.type, createdAt: isoTime(record.createdAt), payload: JSON.parse(body) as Record<string, unknown>, body };
}
