import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

/** One span as an OTLP/HTTP JSON export carries it, with its attributes flattened. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  serviceName: string;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number };
}

export interface OtlpCollector {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (spans are POSTed to `/v1/traces` under it). */
  readonly url: string;
  readonly spans: CollectedSpan[];
  /** Content types of the exports received. */
  readonly contentTypes: string[];
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (value: AnyValue) => value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue ?? '';
const flatten = (attributes: KeyValue[] | undefined) => Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, valueOf(value)]));

/**
 * A real OTLP/HTTP collector on 127.0.0.1, port 0, taking JSON exports (what
 * `@opentelemetry/exporter-trace-otlp-http` sends) at `/v1/traces`. Closed when the test finishes.
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      contentTypes.push(String(request.headers['content-type']));
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> };
        for (const resourceSpans of body.resourceSpans ?? []) {
          const serviceName = String(flatten(resourceSpans.resource?.attributes)['service.name'] ?? '');
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({ traceId: String(span.traceId), spanId: String(span.spanId), parentSpanId: String(span.parentSpanId ?? ''), name: String(span.name), kind: Number(span.kind), serviceName, attributes: flatten(span.attributes as KeyValue[]), status: (span.status ?? {}) as { code?: number } });
            }
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes };
}
