import type { FastifyInstance } from 'fastify';
import { eventInputSchema } from '../../transport/event-input.js';
import { eventIdParams, parseInput } from '../schemas.js';
import type { HttpDeps } from '../server.js';

export function registerEventRoutes(app: FastifyInstance, { engine, embedded }: HttpDeps): void {
  app.post('/events', async (request, reply) => {
    const input = parseInput(eventInputSchema, request.body, 'body');
    const { answer, duplicate } = await embedded.submit(request.projectId, input);
    return reply.status(duplicate ? 200 : 202).send(answer);
  });

  app.post('/events/:eventId/replay', async (request, reply) => {
    const { eventId } = parseInput(eventIdParams, request.params, 'params');
    const deliveryId = await engine.actorFor(request.projectId).replay(eventId);
    return reply.status(202).send({ deliveryId });
  });
}
