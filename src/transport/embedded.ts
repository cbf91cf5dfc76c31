import { HooklineError } from '../errors.js';
import type { EventInput } from './event-input.js';
import type { BatchEventSink, InboundTransport, IngestResult } from './types.js';

const notTakingEvents = () => new HooklineError('HOOKLINE_ERR_SHUTTING_DOWN', 'this node is not taking events (starting or draining); send again shortly');

/** The in-process transport: the HTTP layer submits events straight to the engine. */
export class EmbeddedTransport implements InboundTransport {
  readonly name = 'embedded';
  private sink: BatchEventSink | null = null;

  /** Started by the engine, which takes batches as well as single events. */
  async start(sink: BatchEventSink): Promise<void> {
    this.sink = sink;
  }

  async stop(): Promise<void> {
    this.sink = null;
  }

  submit(projectId: string, input: EventInput, traceparent?: string): Promise<IngestResult> {
    if (!this.sink) return Promise.reject(notTakingEvents());
    return this.sink.ingest(projectId, input, traceparent);
  }

  submitBatch(projectId: string, inputs: readonly EventInput[], traceparent?: string): Promise<Array<PromiseSettledResult<IngestResult>>> {
    if (!this.sink) return Promise.reject(notTakingEvents());
    return this.sink.ingestBatch(projectId, inputs, traceparent);
  }
}
