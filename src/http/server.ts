import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../actors/engine.js';
import { DEFAULT_RETRY_AFTER_SECONDS, HooklineError } from '../errors.js';
import { FORWARDED_HEADER } from '../cluster/rpc.js';
import type { ForwardedReply, ForwardedRequest } from '../cluster/rpc.js';
import type { EmbeddedTransport } from '../transport/embedded.js';
import { PortalLinks, isPortalToken, portalRefusal } from '../portal/portal-links.js';
import type { PortalAccess } from '../portal/portal-links.js';
import { PortalLinkTable } from '../store/portal-link-table.js';
import { answerClientError } from './client-error.js';
import { answerError, toHooklineError } from './error-answer.js';
import { noRouteError } from './no-route.js';
import { ProjectRateLimiter } from './rate-limit.js';
import { requestIdGenerator } from './request-ids.js';
import { acceptJsonBodies, closeIfBodyUnread } from './request-body.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerDeliveryRoutes } from './routes/deliveries.js';
import { registerEventRoutes } from './routes/events.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { registerOpsRoutes } from './routes/ops.js';
import { registerPortalLinkRoutes } from './routes/portal-links.js';
import { registerRejectedEventRoutes } from './routes/rejected-events.js';
import { registerStatsRoutes } from './routes/stats.js';
import { registerDashboardRoutes } from './routes/ui.js';
import { registerWebhookRoutes } from './routes/webhook.js';

/** Cluster mode: routes a project's calls to the node that owns its partition. */
export interface ClusterRouting {
  readonly nodeId: string;
  /** The value of FORWARDED_HEADER on calls this node answers for another node. */
  readonly forwardToken: string;
  ownsProject(projectId: string): boolean;
  forward(projectId: string, request: ForwardedRequest): Promise<ForwardedReply>;
  /** The project of a key not (yet) mirrored here, from the cluster directory; null if none. */
  authenticate(apiKey: string): Promise<string | null>;
  /** This node's part of the cluster, for `GET /healthz`. */
  status(): { nodeId: string; partitions: number[]; partitionCount: number };
}

/**
 * Whether a node takes traffic, for `GET /readyz` (200 only when `ready`): where it is in its life,
 * or `unavailable` with why, when it runs but cannot do its job (its NATS connection ended for good).
 */
export type NodeReadiness = { status: 'starting' | 'ready' | 'draining' } | { status: 'unavailable'; reason: string };

export interface HttpDeps {
  engine: Engine;
  embedded: EmbeddedTransport;
  /** @default always `{ status: 'ready' }` (an API built around an engine that is already running) */
  readiness?: () => NodeReadiness;
  /** @default none (single node: every project is served here) */
  cluster?: ClusterRouting;
  /** @default links in the engine's LMDB store, on the system clock (a cluster passes its directory's) */
  portalLinks?: PortalLinks;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes rate-limit tokens per event itself (a batch), not one per request in the auth hook. */
    countsEvents?: boolean;
    /** Any node answers the route itself (it needs no partition): a cluster does not forward it. */
    anyNode?: boolean;
  }
  interface FastifyRequest {
    /** The project the bearer key names; set by the auth hook on every /v1 route. */
    projectId: string;
    /** Set when the bearer token is a portal link's: what it may do, until when. */
    portal: PortalAccess | null;
  }
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** The management API: thin routes over the engine. Every error leaves as `{"error":{…}}`. */
export function buildHttpServer(deps: HttpDeps, options: { logger?: FastifyBaseLogger } = {}): FastifyInstance {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: deps.engine.settings.maxBodyBytes,
    genReqId: requestIdGenerator(),
    // Fastify's default (100) refused the longest event ids (`evt_` and 100 characters) in
    // `/v1/events/:eventId/replay`; the params schemas bound ids at 200.
    routerOptions: { maxParamLength: 256 },
    // Fastify's two info lines per request cost ~12% of a delivery's CPU; they move to debug below.
    logController: new LogController({ disableRequestLogging: true }),
    // A closing cluster node has handed its partitions over and forwards what still reaches it on
    // an open connection; Fastify's own 503 (in its shape, not ours) would refuse it instead.
    return503OnClosing: deps.cluster === undefined,
    clientErrorHandler: answerClientError,
    // A URL the router cannot decode (`/v1/events/%/replay`) fails before any route or error
    // handler runs; without this it would answer in Fastify's shape instead of ours.
    frameworkErrors: (error, _request, reply) => {
      (reply as FastifyReply).status(400).send(new HooklineError('HOOKLINE_ERR_VALIDATION', error.message, { details: [{ path: 'url', message: error.message }] }).toJSON());
    },
  }) as unknown as FastifyInstance;
  app.decorateRequest('projectId', '');
  app.decorateRequest('portal', null);
  const portalLinks = deps.portalLinks ?? new PortalLinks(new PortalLinkTable(deps.engine.store.root), Date.now);
  // Request lines only when debugging: at info they would be most of the log and of the CPU.
  if (options.logger && ['debug', 'trace'].includes(options.logger.level)) {
    app.addHook('onRequest', async (request) => request.log.debug({ req: request }, 'incoming request'));
    app.addHook('onResponse', async (request, reply) => request.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed'));
  }
  acceptJsonBodies(app);

  const rateLimiter = new ProjectRateLimiter(deps.engine.settings.rateLimit);
  const cluster = deps.cluster;
  /** A call this node answers for another (re-injected by answerForwarded); never forwarded again. */
  const isForwarded = (request: FastifyRequest) => cluster !== undefined && request.headers[FORWARDED_HEADER] === cluster.forwardToken;
  /** The call as the project's owner is sent it. */
  const forwardCall = (request: FastifyRequest) => {
    const headers: Record<string, string> = { authorization: request.headers.authorization ?? '' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    // The producer's trace goes on with the call: the owner's ingest span is its child.
    if (typeof request.headers.traceparent === 'string') headers.traceparent = request.headers.traceparent;
    return cluster!.forward(request.projectId, { method: request.method, url: request.url, headers, body: request.body === undefined ? null : JSON.stringify(request.body) });
  };
  /**
   * A client's call this node began, whose partition was handed over meanwhile (its answer is 503
   * `partition_moving` or `shutting_down`: nothing was changed), goes to the new owner, as if this
   * node had not owned the partition when the call came.
   */
  const movedAway = (error: unknown, request: FastifyRequest) => {
    const code = (error as { code?: unknown }).code;
    return cluster !== undefined && !request.is404 && request.projectId !== '' && !isForwarded(request) && (code === 'HOOKLINE_ERR_PARTITION_MOVING' || code === 'HOOKLINE_ERR_SHUTTING_DOWN') && !cluster.ownsProject(request.projectId);
  };

  app.setErrorHandler(async (error, request, reply) => {
    if (movedAway(error, request)) {
      const answer = await forwardCall(request).catch(() => null);
      if (answer) return reply.status(answer.statusCode).headers(answer.headers).send(answer.body);
    }
    // An unknown route reads its body before the not-found handler runs: whatever the body, no such route.
    const hooklineError = request.is404 ? noRouteError(request) : answerError(toHooklineError(error, request), request);
    const retryAfterSeconds = hooklineError.retryAfterSeconds ?? (hooklineError.status === 503 ? DEFAULT_RETRY_AFTER_SECONDS : undefined);
    if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
    closeIfBodyUnread(request, reply);
    return reply.status(hooklineError.status).send(hooklineError.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(noRouteError(request).toJSON());
  });

  app.register(async (v1) => {
    v1.addHook('onRequest', async (request: FastifyRequest, _reply: FastifyReply) => {
      const token = bearerToken(request);
      if (token && isPortalToken(token)) {
        const access = await portalLinks.access(token);
        if (!access) throw new HooklineError('HOOKLINE_ERR_UNAUTHORIZED', 'this portal link has expired or was revoked: ask for a new one');
        // Refused here, before a cluster forwards the call: a refused call goes nowhere.
        // The route's own path, not the URL as sent: `/v1/portal%2Dlinks` is the same route.
        const refusal = portalRefusal(access, request.method, request.routeOptions.url ?? request.url);
        if (refusal) throw refusal;
        request.portal = access;
      }
      let projectId = request.portal ? request.portal.projectId : token ? deps.engine.authenticate(token) : null;
      // A key made on another node a moment ago may not be mirrored here yet.
      if (!projectId && token && cluster && !request.portal) projectId = await cluster.authenticate(token);
      if (!projectId) throw new HooklineError('HOOKLINE_ERR_UNAUTHORIZED', 'send "authorization: Bearer <API key>" with a key of this Hookline');
      request.projectId = projectId;
      // A call on its way to the owner is counted there, once, not here as well.
      if (cluster && !isForwarded(request) && !cluster.ownsProject(projectId)) return;
      // A batch is counted by its events, once its body is parsed (in its route).
      if (request.routeOptions.config.countsEvents) return;
      const waitSeconds = rateLimiter.take(projectId);
      if (waitSeconds > 0) throw rateLimiter.refusal(waitSeconds, 'requests');
    });
    if (cluster) {
      // After auth and body parsing: a call about another node's partition is answered by that node.
      v1.addHook('preHandler', async (request, reply) => {
        if (request.routeOptions.config.anyNode || cluster.ownsProject(request.projectId)) return;
        // Forwarded here, but the partition moved on meanwhile: never forward twice (no loops), and
        // never answer from this node's possibly stale copy. The caller retries.
        if (isForwarded(request)) throw new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `node ${cluster.nodeId} no longer serves this project's partition; retry shortly`, { retryAfterSeconds: 1 });
        const answer = await forwardCall(request);
        return reply.status(answer.statusCode).headers(answer.headers).send(answer.body);
      });
    }
    registerWebhookRoutes(v1, deps);
    registerEventRoutes(v1, deps, rateLimiter);
    registerDeliveryRoutes(v1, deps);
    registerRejectedEventRoutes(v1, deps);
    registerStatsRoutes(v1, deps);
    registerPortalLinkRoutes(v1, portalLinks);
  }, { prefix: '/v1' });

  registerAdminRoutes(app, deps, bearerToken);
  registerOpsRoutes(app, deps);
  registerOpenApiRoute(app);
  registerDashboardRoutes(app, deps);
  return app;
}
