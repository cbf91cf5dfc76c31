import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HooklineError } from '../../errors.js';
import { noRouteError } from '../no-route.js';
import type { ProjectCreatedResponse } from '../response-schemas.js';
import { createProjectBody, parseInput } from '../schemas.js';
import type { HttpDeps } from '../server.js';
import { listRejectedEvents } from './rejected-events.js';

/** Admin routes exist only when HOOKLINE_ADMIN_KEY is set; otherwise they answer 404 like any unknown path. */
export function registerAdminRoutes(app: FastifyInstance, deps: HttpDeps, bearerToken: (request: FastifyRequest) => string | null): void {
  const { engine } = deps;
  app.register(async (admin) => {
    // On request, before the body is read: a caller without the key learns nothing from how its body fares.
    admin.addHook('onRequest', async (request) => {
      if (!engine.settings.adminKey) throw noRouteError(request, 'set HOOKLINE_ADMIN_KEY to enable admin routes');
      const token = bearerToken(request);
      if (!token || !engine.isAdminKey(token)) throw new HooklineError('HOOKLINE_ERR_UNAUTHORIZED', 'admin routes take "authorization: Bearer <HOOKLINE_ADMIN_KEY>"');
    });

    admin.get('/admin/v1/rejected-events', async (request) => listRejectedEvents(deps, null, request.query));

    admin.post('/admin/v1/projects', async (request, reply) => {
      const { name } = parseInput(createProjectBody, request.body, 'body');
      return reply.status(201).send((await engine.createProject(name)) satisfies ProjectCreatedResponse);
    });
  });
}
