import type { FastifyInstance } from 'fastify';
import type { RejectedEventRecord } from '../../store/records.js';
import { isoTime } from '../../iso-time.js';
import type { RejectedEventPageResponse } from '../response-schemas.js';
import { parseInput, rejectedEventsQuery } from '../schemas.js';
import type { HttpDeps } from '../server.js';

export function presentRejectedEvent(record: RejectedEventRecord) {
  return { ...record, receivedAt: isoTime(record.receivedAt) };
}

/** Rejected inbound events (NATS), newest first; `projectId` null lists every project's (admin). */
export function listRejectedEvents({ engine }: HttpDeps, projectId: string | null, query: unknown): RejectedEventPageResponse {
  const { limit, cursor } = parseInput(rejectedEventsQuery, query, 'query');
  const page = engine.store.listRejectedEvents(projectId, limit + 1, cursor);
  const more = page.length > limit;
  const data = page.slice(0, limit);
  return { data: data.map(presentRejectedEvent), nextCursor: more ? data[data.length - 1]!.id : null };
}

export function registerRejectedEventRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/logs/rejected-events', async (request) => listRejectedEvents(deps, request.projectId, request.query));
}
