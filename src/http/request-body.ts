import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * How the API reads request bodies. Bodies are JSON only (any other content type is 415), and an
 * empty one is no body at all: clients that always send `content-type: application/json` (many
 * HTTP libraries do) reach a route with an optional body, or none, as if they had sent nothing, and
 * a route that needs one answers its usual validation error. Routes that take no body (retry,
 * replay) never read one, as Svix's do: whatever is sent, the answer is the route's own.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser(['text/plain']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    parseJson(request, String(body), done);
  });
}

/** Registers `routes` in a scope that leaves any request body unread, whatever its type or size. */
export function ignoreBodies(app: FastifyInstance, routes: (scope: FastifyInstance) => void): void {
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    scope.addHook('onSend', async (request, reply, payload) => {
      closeIfBodyUnread(request, reply);
      return payload;
    });
    routes(scope);
  });
}

/**
 * Answering before the body has arrived (refused on request, or a route that reads none): close the
 * connection rather than keep a socket still receiving a body nobody reads; left open, such a socket
 * also held up a graceful shutdown.
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  if (!request.raw.complete) reply.header('connection', 'close');
}
