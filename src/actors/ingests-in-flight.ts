import type { FirstIngest } from './envelope.js';
import type { IngestResult } from '../transport/types.js';

/** An ingest of an event id, from the moment it is made until it is stored and replicated, or refused. */
export interface IngestInFlight extends FirstIngest {
  result: Promise<IngestResult>;
}

/**
 * The ingests of event ids in flight on this node, by project and id. One registry for every actor
 * of the engine, so that it outlives an actor: a cluster node drops a partition's actors when their
 * drain runs out of time, and a copy of an event then meets a new actor while the first ingest is
 * still committing or replicating. The copy waits for it: a repeat once the first is kept, refused
 * as the first was if it is not (never acknowledged for an event that is then taken back, never
 * stored a second time beside it).
 */
export class IngestsInFlight {
  private readonly byKey = new Map<string, IngestInFlight>();

  get(projectId: string, eventId: string): IngestInFlight | undefined {
    return this.byKey.get(keyOf(projectId, eventId));
  }

  /** Holds `ingest` until its result settles. */
  track(projectId: string, eventId: string, ingest: IngestInFlight): void {
    const key = keyOf(projectId, eventId);
    this.byKey.set(key, ingest);
    const forget = () => {
      if (this.byKey.get(key) === ingest) this.byKey.delete(key);
    };
    ingest.result.then(forget, forget);
  }
}

function keyOf(projectId: string, eventId: string): string {
  return `${projectId}\u0000${eventId}`;
}
