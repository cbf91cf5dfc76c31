import type { IngestAnswer, RejectedEventRecord } from '../store/records.js';
import type { EventInput } from './event-input.js';

/** What an accepted event is answered with. */
export interface IngestResult {
  answer: IngestAnswer;
  /** True when the event id was seen before with the same body: nothing new was stored. */
  duplicate: boolean;
}

export type Rejection = Omit<RejectedEventRecord, 'id' | 'receivedAt'>;

/** Where inbound transports hand accepted events: the engine. */
export interface EventSink {
  /**
   * Stores the event (and its delivery when it matches) and resolves once that is durably committed.
   * Rejects with a coded HooklineError (unknown project, id conflict, shutting down, storage).
   * `traceparent`, the ingest span's, is kept with a new event: the parent of its later spans.
   */
  ingest(projectId: string, input: EventInput, traceparent?: string): Promise<IngestResult>;
  /** Records an inbound message that will not be accepted; resolves once that record is durable. */
  reject(rejection: Rejection): Promise<void>;
}

/** A sink that also takes events in batches (the engine; `POST /v1/events/batch` needs one). */
export interface BatchEventSink extends EventSink {
  /**
   * Stores several events of one project in one commit, each de-duplicated as `ingest` would
   * (copies of one id within the batch too), and resolves once that commit is durable with each
   * event's outcome in order. Rejects, storing nothing, when the sink takes no events at all now
   * (shutting down, overloaded, storage full, unknown project).
   */
  ingestBatch(projectId: string, inputs: readonly EventInput[], traceparent?: string): Promise<Array<PromiseSettledResult<IngestResult>>>;
}

/**
 * A source of events: the embedded transport (HTTP `POST /v1/events`) or NATS JetStream. The engine
 * starts and stops transports without knowing which it has.
 */
export interface InboundTransport {
  readonly name: string;
  start(sink: EventSink): Promise<void>;
  /** Stops taking events; resolves when nothing more will reach the sink. */
  stop(): Promise<void>;
}
