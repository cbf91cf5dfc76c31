import { HooklineError } from '../errors.js';
import type { IngestResult } from '../actors/project-actor.js';
import type { EventInput } from './event-input.js';
import type { EventSink, InboundTransport } from './types.js';

/** The in-process transport: the HTTP layer submits events straight to the engine. */
export class EmbeddedTransport implements InboundTransport {
  readonly name = 'embedded';
  private sink: EventSink | null = null;

  async start(sink: EventSink): Promise<void> {
    this.sink = sink;
  }

  async stop(): Promise<void> {
    this.sink = null;
  }

  submit(projectId: string, input: EventInput): Promise<IngestResult> {
    if (!this.sink) return Promise.reject(new HooklineError('HOOKLINE_ERR_SHUTTING_DOWN', 'this node is not taking events (starting or draining); send again shortly'));
    return this.sink.ingest(projectId, input);
  }
}
