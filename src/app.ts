import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Logger as PinoLogger } from 'pino';
import { Engine } from './actors/engine.js';
import type { EngineOptions, SharedProjects } from './actors/engine.js';
import type { Settings } from './config/settings.js';
import type { HooklineError } from './errors.js';
import { buildHttpServer } from './http/server.js';
import type { NodeReadiness } from './http/server.js';
import { checkListenAddress, listenError } from './http/listen-address.js';
import { PortalLinks } from './portal/portal-links.js';
import { claimDataDir } from './store/data-dir.js';
import { EmbeddedTransport } from './transport/embedded.js';
import type { NatsOutcomePublisher } from './transport/nats-outcomes.js';
import type { Tracing } from './tracing/tracing.js';
import { FORWARDED_HEADER } from './cluster/rpc.js';
import type { ForwardedReply, ForwardedRequest } from './cluster/rpc.js';

export interface Hookline {
  engine: Engine;
  http: FastifyInstance;
  /** The address the HTTP API listens on, e.g. http://127.0.0.1:8080. */
  url: string;
  /** A key generated for the `default` project on its first start (shown once), else null. */
  generatedApiKey: string | null;
  /** Graceful stop: no new events, in-flight attempts drain, LMDB is flushed, HTTP closes. */
  close(): Promise<void>;
}

export interface StartOptions extends Omit<EngineOptions, 'settings' | 'logger'> {
  /** A pino logger; @default one at `settings.logLevel` writing JSON to stdout */
  logger?: PinoLogger;
  /**
   * Cluster mode: how many reconnects in a row the lease worker's NATS connection may fail before
   * it ends for good (tests make it end). @default -1, reconnect forever
   */
  leaseReconnectAttempts?: number;
}

/** The structured logger of a node: pino, with secrets redacted wherever they could appear. */
export function createLogger(settings: Settings): PinoLogger {
  return pino({
    level: settings.logLevel,
    redact: { paths: ['req.headers.authorization', 'secret', 'apiKey', '*.secret', '*.apiKey'], censor: '[redacted]' },
  });
}

/**
 * Starts a whole node: engine (store, scheduler, actors), embedded transport and HTTP API.
 *
 * The order makes a failed start cheap and harmless: the data directory is claimed first (so a
 * second node on it is refused before anything else), then the listen address and NATS are checked
 * before LMDB is opened; whatever the start created in the data directory is removed if it fails.
 */
export async function startHookline(settings: Settings, options: StartOptions = {}): Promise<Hookline> {
  const logger = options.logger ?? createLogger(settings);
  const dataDir = claimDataDir(settings.dataDir);
  let outcomes: NatsOutcomePublisher | undefined;
  let tracing: Tracing | null = options.tracing ?? null;
  try {
    await checkListenAddress(settings.host, settings.port);
    outcomes = await startOutcomePublisher(settings, logger);
    // Loaded only when an OTLP endpoint is set: a node without one loads nothing of OpenTelemetry.
    if (!tracing && settings.tracing) tracing = (await import('./tracing/otel-tracing.js')).otelTracing(settings.tracing);
    const nodeOptions = { ...options, tracing, ...(outcomes ? { outcomes } : {}) };
    const node = settings.cluster ? await startClusterNode(settings, nodeOptions, logger) : await startSingleNode(settings, nodeOptions, logger);
    const close = node.close;
    const publisher = outcomes;
    return {
      ...node,
      async close() {
        try {
          await close();
          // After the engine: the outcomes of the attempts it drained are published too.
          await publisher?.close();
        } finally {
          dataDir.release();
        }
      },
    };
  } catch (error) {
    await outcomes?.close().catch(() => {});
    await tracing?.shutdown().catch(() => {});
    dataDir.abandon();
    throw error;
  }
}

/** HOOKLINE_NATS_OUTCOMES: the publisher of outcomes, its stream made; loaded only when set. */
async function startOutcomePublisher(settings: Settings, logger: PinoLogger): Promise<NatsOutcomePublisher | undefined> {
  if (!settings.natsOutcomes || !settings.natsUrl) return undefined;
  const [{ NatsOutcomePublisher: Publisher }, { natsAccess }] = await Promise.all([import('./transport/nats-outcomes.js'), import('./transport/nats-access.js')]);
  return Publisher.start(natsAccess(settings), { stream: settings.natsStream, subjectPrefix: settings.natsSubjectPrefix, replicas: settings.natsReplicas, logger });
}

async function startSingleNode(settings: Settings, options: StartOptions, logger: PinoLogger): Promise<Hookline> {
  const embedded = new EmbeddedTransport();
  const transports = [embedded, ...(options.transports ?? [])];
  const readiness = new Readiness();
  if (settings.natsUrl) {
    // Loaded only when NATS is configured: the NATS client is a tenth of a second of every start.
    const [{ NatsTransport }, { natsAccess }] = await Promise.all([import('./transport/nats.js'), import('./transport/nats-access.js')]);
    const nats = new NatsTransport({ servers: settings.natsUrl, access: natsAccess(settings), replicas: settings.natsReplicas, stream: settings.natsStream, subjectPrefix: settings.natsSubjectPrefix, durable: settings.natsDurable, tracing: options.tracing ?? null, logger, onConnectionClosed: (reason) => readiness.fail(reason) });
    await nats.connect();
    transports.push(nats);
  }
  let engine: Engine;
  try {
    engine = await Engine.start({ ...options, settings, logger, transports });
  } catch (error) {
    await Promise.allSettled(transports.map((transport) => transport.stop()));
    throw error;
  }
  const http = buildHttpServer({ engine, embedded, readiness: () => readiness.state }, { logger });
  return listen(engine, http, settings, readiness, async () => {});
}

/**
 * A cluster node: NATS state first (directory, leases, changelog), then the engine, which resumes
 * nothing until the coordinator gives it partitions, then the API, which forwards other nodes' calls.
 */
async function startClusterNode(settings: Settings, options: StartOptions, logger: PinoLogger): Promise<Hookline> {
  const { ClusterNode } = await import('./cluster/cluster-node.js');
  const { DirectoryPortalLinks } = await import('./cluster/portal-link-directory.js');
  const readiness = new Readiness();
  const { leaseReconnectAttempts } = options;
  const clusterSettings = { nodeId: settings.nodeId, partitions: settings.partitions, leaseMs: settings.leaseMs, ...(leaseReconnectAttempts !== undefined ? { leaseReconnectAttempts } : {}) };
  // Either of its NATS connections (the node's, the lease worker's) ending for good takes it out of rotation.
  const cluster = new ClusterNode(settings, clusterSettings, logger, (reason) => readiness.fail(reason));
  await cluster.connect();
  const embedded = new EmbeddedTransport();
  let engine: Engine;
  try {
    engine = await Engine.start({ ...options, settings, logger, transports: [embedded, ...(options.transports ?? [])], ownership: cluster });
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  engine.store.replicator = cluster;
  const portalLinks = new PortalLinks(new DirectoryPortalLinks(cluster.sharedDirectory), Date.now);
  const http = buildHttpServer({ engine, embedded, cluster, portalLinks, readiness: () => readiness.state }, { logger });
  try {
    await cluster.start(engine, (request) => answerForwarded(http, request, cluster.forwardToken));
  } catch (error) {
    await cluster.stop();
    await engine.stop();
    throw error;
  }
  // Partitions go first, so their new owners can take over while this node drains.
  return listen(engine, http, settings, readiness, () => cluster.leave(), { sharedProjects: cluster, readyOnce: () => cluster.everyPartitionOwned(), afterStop: () => cluster.stop() });
}

/**
 * Whether a node takes traffic, for `GET /readyz`: starting until it listens, draining once closing.
 * A node whose NATS connection (in a cluster, either of its two) ended for good runs on (HTTP,
 * deliveries) but is `unavailable`, with the reason, until it is restarted: a load balancer and an
 * operator both see it at once.
 */
class Readiness {
  stage: 'starting' | 'ready' | 'draining' = 'starting';
  private unavailable: string | null = null;

  fail(reason: HooklineError): void {
    this.unavailable ??= reason.message;
  }

  get state(): NodeReadiness {
    return this.unavailable !== null && this.stage !== 'draining' ? { status: 'unavailable', reason: this.unavailable } : { status: this.stage };
  }
}

/** Answers a call another node forwarded here, through this node's own routes (marked, so it is not forwarded again). */
async function answerForwarded(http: FastifyInstance, request: ForwardedRequest, forwardToken: string): Promise<ForwardedReply> {
  const response = await http.inject({
    method: request.method as 'GET',
    url: request.url,
    headers: { ...request.headers, [FORWARDED_HEADER]: forwardToken },
    ...(request.body !== null ? { payload: request.body } : {}),
  });
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'retry-after']) {
    const value = response.headers[name];
    if (value !== undefined) headers[name] = String(value);
  }
  return { statusCode: response.statusCode, headers, body: response.body };
}

interface ClusterListening {
  sharedProjects: SharedProjects;
  /** Resolves true once the node may answer `/readyz` ready (every partition has an owner). */
  readyOnce: () => Promise<boolean>;
  /** Closes the node's NATS connection, once HTTP and the engine are closed. */
  afterStop: () => Promise<void>;
}

async function listen(engine: Engine, http: FastifyInstance, settings: Settings, readiness: Readiness, beforeStop: () => Promise<void>, cluster?: ClusterListening): Promise<Hookline> {
  try {
    const { generatedApiKey } = await engine.ensureDefaultProject(cluster?.sharedProjects);
    const url = await http.listen({ host: settings.host, port: settings.port }).catch((error: unknown) => {
      throw listenError(error, settings.host, settings.port);
    });
    if (!cluster) readiness.stage = 'ready';
    else {
      void cluster.readyOnce().then((ready) => {
        if (ready && readiness.stage === 'starting') readiness.stage = 'ready';
      });
    }
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        readiness.stage = 'draining';
        await beforeStop();
        if (!cluster) {
          await engine.stop();
          await http.close();
          return;
        }
        // Its partitions handed over, a cluster node answers what is still in flight (or on a
        // keep-alive connection) by forwarding it to the new owners, over NATS: closed last.
        await http.close();
        await engine.stop();
        await cluster.afterStop();
      })());
    return { engine, http, url, generatedApiKey, close };
  } catch (error) {
    await beforeStop().catch(() => {});
    await engine.stop();
    await http.close().catch(() => {});
    await cluster?.afterStop().catch(() => {});
    throw error;
  }
}
