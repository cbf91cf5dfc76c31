import type { FastifyInstance } from 'fastify';
import type { DeliveryStateCountsResponse } from '../response-schemas.js';
import type { HttpDeps } from '../server.js';

/** Readings for dashboards: cheap counts from the indexes, safe to poll every few seconds. */
export function registerStatsRoutes(app: FastifyInstance, { engine }: HttpDeps): void {
  app.get('/stats/delivery-states', async (request): Promise<DeliveryStateCountsResponse> => ({ counts: engine.countDeliveriesByStatus(request.projectId) }));
}
