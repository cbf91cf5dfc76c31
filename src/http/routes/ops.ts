import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../server.js';

export function registerOpsRoutes(app: FastifyInstance, { engine }: HttpDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', engine.metrics.registry.contentType);
    return engine.metrics.registry.metrics();
  });
}
