import type { WebhookRecord } from '../store/records.js';
import type { SendRequest } from '../transport/http-sender.js';
import type { AttemptAttributes, AttemptSpan, Tracing } from './tracing.js';

/**
 * An attempt's span, a child of its event's kept trace context (`parent`), and the request to send:
 * with the span's `traceparent` header added when the webhook asks for it (`sendTraceparent`).
 * The header is added beside the signed ones, so the signature does not cover it.
 */
export function traceAttempt(tracing: Tracing, parent: string | undefined, attributes: AttemptAttributes, webhook: WebhookRecord, request: SendRequest): { request: SendRequest; span: AttemptSpan } {
  const span = tracing.startAttempt(parent, attributes);
  if (webhook.sendTraceparent !== true) return { request, span };
  const { headers } = request;
  return { request: { ...request, headers: () => ({ ...(typeof headers === 'function' ? headers() : headers), traceparent: span.traceparent }) }, span };
}
