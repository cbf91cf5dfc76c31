import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HooklineError } from '../errors.js';

/**
 * How the API reads request bodies. Bodies are JSON only (any other content type is 415), and an
 * empty one is no body at all: clients that always send `content-type: application/json` (many
 * HTTP libraries do) reach a route with an optional body, or none, as if they had sent nothing, and
 * a route that needs one answers its usual validation error. Keys that could reach a prototype are
 * refused by name (see parseJsonBody). Routes that take no body (retry, replay) never read one, as
 * Svix's do: whatever is sent, the answer is the route's own.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser(['text/plain', 'application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, body.length === 0 ? undefined : parseJsonBody(String(body)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/** Each character of `word` as itself or its `\uXXXX` escape (either case of hex digits). */
const spelledAnyway = (word: string): string =>
  [...word].map((char) => `(?:${char}|\\\\u${char.charCodeAt(0).toString(16).padStart(4, '0').replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`)})`).join('');

/** A key `"__proto__"` or `"constructor"`, however escaped: the bodies worth walking. */
const SUSPECT_KEY = new RegExp(`"(?:${spelledAnyway('__proto__')}|${spelledAnyway('constructor')})"\\s*:`);

/**
 * A body's JSON, refusing the keys that can reach an object's prototype when the value is merged or
 * copied (`__proto__`, and `prototype` inside `constructor`, as Fastify's own parser refuses them),
 * with a message that names the key and where it is rather than calling valid JSON invalid.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HooklineError('HOOKLINE_ERR_BAD_JSON', `the body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  // Only a text holding one of the keys (literally or with \u escapes) needs the walk: any `\u`
  // alone made every body with escaped text walk, a path string made for each of its keys.
  if (!SUSPECT_KEY.test(text)) return value;
  const problem = prototypeKey(value);
  if (problem) {
    const message = `the key "${problem.key}" is not accepted (it could reach the prototype of the objects it is copied into); rename it`;
    throw new HooklineError('HOOKLINE_ERR_VALIDATION', `invalid body: ${problem.path}: ${message}`, { details: [{ path: problem.path, message }] });
  }
  return value;
}

/** The first `__proto__` key, or `constructor` holding `prototype`, and its path; iterative, as JSON may nest deeper than the stack. */
function prototypeKey(root: unknown): { key: string; path: string } | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value: root, path: 'body' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (typeof next.value !== 'object' || next.value === null) continue;
    for (const [key, child] of Object.entries(next.value)) {
      const path = `${next.path}.${key}`;
      if (key === '__proto__') return { key, path };
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype')) return { key: 'constructor.prototype', path: `${path}.prototype` };
      pending.push({ value: child, path });
    }
  }
  return null;
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
