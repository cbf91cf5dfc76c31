import { projectOfStoreId } from '../actors/operational-events.js';
import type { HooklineStore } from '../store/store.js';
import type { WebhookRecord } from '../store/records.js';
import type { SendRequest } from '../transport/http-sender.js';
import type { AttemptSpan, Tracing } from './tracing.js';

/** Which attempt a span is for. */
export interface AttemptOf {
  /** The lifecycle's store id: the project's, or its operational deliveries' (`<project>~ops`). */
  storeId: string;
  eventId: string;
  deliveryId: string;
  /** Its number across the delivery's life, from 1. */
  attempt: number;
}

/**
 * An attempt's span, a child of the trace context its event keeps, and the request to send: with
 * the span's `traceparent` header added when the webhook asks for it (`sendTraceparent`). The
 * header is added beside the signed ones, so the signature does not cover it.
 */
export function traceAttempt(tracing: Tracing, store: HooklineStore, { storeId, eventId, deliveryId, attempt }: AttemptOf, webhook: WebhookRecord, request: SendRequest): { request: SendRequest; span: AttemptSpan } {
  const parent = store.getEvent(storeId, eventId)?.traceparent;
  const span = tracing.startAttempt(parent, { projectId: projectOfStoreId(storeId), eventId, deliveryId, attempt, url: webhook.callbackUrl });
  if (webhook.sendTraceparent !== true) return { request, span };
  const { headers } = request;
  return { request: { ...request, headers: () => ({ ...(typeof headers === 'function' ? headers() : headers), traceparent: span.traceparent }) }, span };
}
