import type { FastifyRequest } from 'fastify';
import { HooklineError } from '../errors.js';

/** The 404 of a method and path the API does not serve; `hint` says how to get the route, if there is a way. */
export function noRouteError(request: FastifyRequest, hint?: string): HooklineError {
  return new HooklineError('HOOKLINE_ERR_NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}${hint ? ` (${hint})` : ''}`);
}
