import { isoTime } from '../iso-time.js';
import type { DeliveryRecord, WebhookRecord } from '../store/records.js';

const isoOrNull = (ms: number | null) => (ms === null ? null : isoTime(ms));

export function presentWebhook(webhook: WebhookRecord) {
  return {
    callbackUrl: webhook.callbackUrl,
    status: webhook.state,
    eventTypes: webhook.eventTypes,
    createdAt: isoTime(webhook.createdAt),
    updatedAt: isoTime(webhook.updatedAt),
  };
}

/** A delivery in the log: `maxAttempts` is where this round dead-letters, counted like `attempts`. */
export function presentDelivery(record: DeliveryRecord) {
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

export function presentDeliveryDetail(record: DeliveryRecord) {
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
    transitions: record.transitions.map((transition) => ({ from: transition.from, to: transition.to, event: transition.event, at: isoTime(transition.at) })),
  };
}
