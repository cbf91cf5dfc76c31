import type { FastifyInstance } from 'fastify';
import { openApiJson } from '../openapi.js';

/** The API's OpenAPI 3.1 document, without a key: it describes the API, it holds no data. */
export function registerOpenApiRoute(app: FastifyInstance): void {
  app.get('/openapi.json', async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(openApiJson()));
}
