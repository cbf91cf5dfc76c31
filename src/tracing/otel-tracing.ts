import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import type { Sampler } from '@opentelemetry/sdk-trace-base';
import type { AttemptAttributes, AttemptEnd, AttemptSpan, IngestSource, IngestSpan, SpanAttributes, Tracing } from './tracing.js';
import type { TracingSettings } from './tracing-settings.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

/**
 * Tracing with the OpenTelemetry SDK, exported over OTLP/HTTP (JSON) in batches. Imported by the
 * node only when an endpoint is set (app.ts). Parents are passed explicitly as `traceparent`
 * strings, so no context manager (async hooks) is installed.
 */
export function otelTracing(settings: TracingSettings): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    sampler: samplerOf(settings),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }))],
  });
  const tracer = provider.getTracer('hookline');
  return {
    startIngest(source: IngestSource, projectId: string, eventCount: number, parent: string | undefined): IngestSpan {
      const span = tracer.startSpan(`ingest ${source}`, { kind: source === 'http' ? SpanKind.SERVER : SpanKind.CONSUMER, attributes: { 'hookline.project_id': projectId, 'hookline.ingest.source': source, 'hookline.event_count': eventCount } }, contextOf(parent));
      return {
        traceparent: formatTraceparent(span.spanContext()),
        end(errorType?: string) {
          if (errorType !== undefined) {
            span.setAttribute('error.type', errorType);
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
    startAttempt(parent: string | undefined, attributes: AttemptAttributes): AttemptSpan {
      return attemptSpan(tracer, contextOf(parent), attributes);
    },
    mark(name: string, parent: string | undefined, attributes: SpanAttributes): void {
      tracer.startSpan(name, { attributes }, contextOf(parent)).end();
    },
    shutdown: () => provider.shutdown(),
  };
}

function attemptSpan(tracer: Tracer, parent: Context, attributes: AttemptAttributes): AttemptSpan {
  const span = tracer.startSpan('POST', {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': 'POST',
      'url.full': withoutCredentials(attributes.url),
      'hookline.project_id': attributes.projectId,
      'hookline.event_id': attributes.eventId,
      'hookline.delivery_id': attributes.deliveryId,
      'hookline.attempt': attributes.attempt,
    },
  }, parent);
  return {
    traceparent: formatTraceparent(span.spanContext()),
    end({ ok, statusCode, errorCode }: AttemptEnd) {
      if (statusCode !== null) span.setAttribute('http.response.status_code', statusCode);
      if (!ok) {
        // Semantic conventions: the status code as text when an answer came, else the failure's class.
        span.setAttribute('error.type', errorCode === 'http_status' && statusCode !== null ? String(statusCode) : (errorCode ?? 'unknown'));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

function contextOf(traceparent: string | undefined): Context {
  const parent = parseTraceparent(traceparent);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, { ...parent, isRemote: true }) : ROOT_CONTEXT;
}

/** `url.full` must not carry credentials (semantic conventions): they are left out, not masked. */
export function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && parsed.password === '') return url;
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  } catch {
    return url;
  }
}

function samplerOf({ sampler, samplerRatio }: TracingSettings): Sampler {
  switch (sampler) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(samplerRatio);
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatio) });
  }
}
