/**
 * What the engine and the transports ask of tracing. A node without an OTLP endpoint has none
 * (`null`): callers check for null and make no span, so tracing off costs a null check. The
 * OpenTelemetry implementation (otel-tracing.ts) is imported only when an endpoint is set.
 *
 * Trace context crosses the node as W3C `traceparent` strings: one is kept in the event record
 * (and so travels in the cluster's changelog), and becomes the parent of the event's later spans.
 */

/** Where events came in. */
export type IngestSource = 'http' | 'nats';

export interface IngestSpan {
  /** The span's own `traceparent`: the parent the ingested events' later spans take. */
  readonly traceparent: string;
  /** Ends the span; `errorType` marks it failed (a HooklineError code, say). */
  end(errorType?: string): void;
}

export interface AttemptAttributes {
  readonly projectId: string;
  readonly eventId: string;
  readonly deliveryId: string;
  /** The attempt's number across the delivery's life, from 1. */
  readonly attempt: number;
  /** The callback URL; credentials in it are never recorded. */
  readonly url: string;
}

/** How an attempt ended, as far as its span tells it (an AttemptOutcome fits). */
export interface AttemptEnd {
  readonly ok: boolean;
  readonly statusCode: number | null;
  readonly errorCode: string | null;
}

export interface AttemptSpan {
  /** The `traceparent` header a receiver gets when the webhook sets `sendTraceparent`. */
  readonly traceparent: string;
  end(outcome: AttemptEnd): void;
}

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

export interface Tracing {
  /** A span for one ingest call: one event, or a batch of `eventCount`; a child of `parent` when it is a valid traceparent. */
  startIngest(source: IngestSource, projectId: string, eventCount: number, parent: string | undefined): IngestSpan;
  /** An HTTP client span for one attempt, a child of the event's kept `traceparent`. */
  startAttempt(parent: string | undefined, attributes: AttemptAttributes): AttemptSpan;
  /** A span with no duration for a moment of note: a dead letter, a circuit or endpoint change. */
  mark(name: string, parent: string | undefined, attributes: SpanAttributes): void;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}
