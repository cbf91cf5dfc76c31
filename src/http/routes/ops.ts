import type { FastifyInstance } from 'fastify';
import { DEFAULT_RETRY_AFTER_SECONDS } from '../../errors.js';
import type { HttpDeps } from '../server.js';

export function registerOpsRoutes(app: FastifyInstance, { engine, cluster, readiness }: HttpDeps): void {
  // Liveness: 200 while the process answers, draining included (restarting a draining node would
  // cut its in-flight attempts short). In a cluster, also this node's id and partitions.
  app.get('/healthz', async () => (cluster ? { status: 'ok', cluster: cluster.status() } : { status: 'ok' }));
  // Readiness: whether to send this node traffic. A load balancer drops a draining node on the 503.
  app.get('/readyz', async (_request, reply) => {
    const state = readiness?.() ?? { status: 'ready' };
    if (state.status !== 'ready') reply.status(503).header('retry-after', String(DEFAULT_RETRY_AFTER_SECONDS));
    return state;
  });
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', engine.metrics.registry.contentType);
    return engine.metrics.registry.metrics();
  });
}
