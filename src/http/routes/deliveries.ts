import type { FastifyInstance } from 'fastify';
import { HooklineError } from '../../errors.js';
import { idLowerBound } from '../../store/ids.js';
import { queryDeliveries } from '../../store/delivery-query.js';
import { presentDelivery, presentDeliveryDetail } from '../present.js';
import { ignoreBodies } from '../request-body.js';
import type { DeliveryPageResponse, RedriveDryRunResponse, RedriveResponse } from '../response-schemas.js';
import { deliveryIdParams, deliveryListQuery, parseInput, redriveBody } from '../schemas.js';
import type { HttpDeps } from '../server.js';

export function registerDeliveryRoutes(app: FastifyInstance, { engine }: HttpDeps): void {
  app.get('/logs/webhook-deliveries', async (request): Promise<DeliveryPageResponse> => {
    const query = parseInput(deliveryListQuery, request.query, 'query');
    const page = queryDeliveries(engine.store, request.projectId, query, engine.unstoredSteps(request.projectId));
    return { data: page.data.map(presentDelivery), nextCursor: page.nextCursor };
  });

  app.get('/logs/webhook-deliveries/:id', async (request) => {
    const { id } = parseInput(deliveryIdParams, request.params, 'params');
    const record = engine.readDelivery(request.projectId, id);
    if (!record) throw new HooklineError('HOOKLINE_ERR_DELIVERY_NOT_FOUND', `no delivery ${id} in this project`);
    return presentDeliveryDetail(record);
  });

  ignoreBodies(app, (bodyless) => {
    bodyless.post('/logs/webhook-deliveries/:id/retry', async (request, reply) => {
      const { id } = parseInput(deliveryIdParams, request.params, 'params');
      const record = await engine.actorFor(request.projectId).recovery.retry(id);
      return reply.status(202).send(presentDelivery(record));
    });
  });

  app.post('/logs/webhook-deliveries/redrive', async (request, reply) => {
    const filter = parseInput(redriveBody, request.body, 'body');
    const bounds = {
      ...(filter.since !== undefined ? { fromId: idLowerBound('dlv', filter.since) } : {}),
      ...(filter.until !== undefined ? { toId: idLowerBound('dlv', filter.until) } : {}),
      ...(filter.eventType !== undefined ? { eventType: filter.eventType } : {}),
    };
    // A dry run changes nothing: 200 with the count a redrive would start now and whether it would
    // fit under HOOKLINE_MAX_WAITING_PER_PROJECT (the dashboard's preview).
    if (filter.dryRun === true) return reply.status(200).send({ redriven: 0, ...engine.redrivePreview(request.projectId, bounds) } satisfies RedriveDryRunResponse);
    const redriven = await engine.actorFor(request.projectId).recovery.redrive(bounds);
    return reply.status(202).send({ redriven } satisfies RedriveResponse);
  });
}
