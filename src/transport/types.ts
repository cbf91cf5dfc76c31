import type { IngestResult } from '../actors/project-actor.js';
import type { RejectedEventRecord } from '../store/records.js';
import type { EventInput } from './event-input.js';

export type Rejection = Omit<RejectedEventRecord, 'id' | 'receivedAt'>;

/** Where inbound transports hand accepted events: the engine. */
export interface EventSink {
  /**
   * Stores the event (and its delivery when it matches) and resolves once that is durably committed.
   * Rejects with a coded HooklineError (unknown project, id conflict, shutting down, storage).
   */
  ingest(projectId: string, input: EventInput): Promise<IngestResult>;
  /** Records an inbound message that will not be accepted; resolves once that record is durable. */
  reject(rejection: Rejection): Promise<void>;
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
