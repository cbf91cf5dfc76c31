import type { IngestSource, Tracing } from './tracing.js';

/**
 * Runs an ingest (one event or a batch) inside its span, a child of the producer's `traceparent`;
 * `run` is given the span's own, which the new events keep. A refusal ends the span failed.
 */
export async function traceIngest<T>(tracing: Tracing, source: IngestSource, projectId: string, eventCount: number, parent: string | undefined, run: (traceparent: string) => Promise<T>): Promise<T> {
  const span = tracing.startIngest(source, projectId, eventCount, parent);
  try {
    const result = await run(span.traceparent);
    span.end();
    return result;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    span.end(typeof code === 'string' ? code : 'error');
    throw error;
  }
}
