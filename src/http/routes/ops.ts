import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../server.js';

export function registerOpsRoutes(app: FastifyInstance, { engine, cluster }: HttpDeps): void {
  // In a cluster, also this node's id and the partitions it serves (for operators and tests).
  app.get('/healthz', async () => (cluster ? { status: 'ok', cluster: cluster.status() } : { status: 'ok' }));
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', engine.metrics.registry.contentType);
    return engine.metrics.registry.metrics();
  });
}
