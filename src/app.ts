import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Logger as PinoLogger } from 'pino';
import { Engine } from './actors/engine.js';
import type { EngineOptions } from './actors/engine.js';
import type { Settings } from './config/settings.js';
import { buildHttpServer } from './http/server.js';
import { EmbeddedTransport } from './transport/embedded.js';
import { NatsTransport } from './transport/nats.js';
import { ClusterNode } from './cluster/cluster-node.js';
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
}

/** The structured logger of a node: pino, with secrets redacted wherever they could appear. */
export function createLogger(settings: Settings): PinoLogger {
  return pino({
    level: settings.logLevel,
    redact: { paths: ['req.headers.authorization', 'secret', 'apiKey', '*.secret', '*.apiKey'], censor: '[redacted]' },
  });
}

/** Starts a whole node: engine (store, scheduler, actors), embedded transport and HTTP API. */
export async function startHookline(settings: Settings, options: StartOptions = {}): Promise<Hookline> {
  const logger = options.logger ?? createLogger(settings);
  if (settings.cluster) return startClusterNode(settings, options, logger);
  const embedded = new EmbeddedTransport();
  const transports = [embedded, ...(options.transports ?? [])];
  if (settings.natsUrl) {
    transports.push(new NatsTransport({ servers: settings.natsUrl, stream: settings.natsStream, subjectPrefix: settings.natsSubjectPrefix, durable: settings.natsDurable, logger }));
  }
  const engine = await Engine.start({ ...options, settings, logger, transports });
  const http = buildHttpServer({ engine, embedded }, { logger });
  return listen(engine, http, settings, async () => {});
}

/**
 * A cluster node: NATS state first (directory, leases, changelog), then the engine, which resumes
 * nothing until the coordinator gives it partitions, then the API, which forwards other nodes' calls.
 */
async function startClusterNode(settings: Settings, options: StartOptions, logger: PinoLogger): Promise<Hookline> {
  const cluster = new ClusterNode(settings, { nodeId: settings.nodeId, partitions: settings.partitions, leaseMs: settings.leaseMs }, logger);
  await cluster.connect();
  const embedded = new EmbeddedTransport();
  const engine = await Engine.start({ ...options, settings, logger, transports: [embedded, ...(options.transports ?? [])], ownership: cluster });
  engine.store.replicator = cluster;
  const http = buildHttpServer({ engine, embedded, cluster }, { logger });
  try {
    await cluster.start(engine, (request) => answerForwarded(http, request, cluster.forwardToken));
  } catch (error) {
    await cluster.stop();
    await engine.stop();
    throw error;
  }
  // Partitions go first, so their new owners can take over while this node drains.
  return listen(engine, http, settings, () => cluster.stop());
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

async function listen(engine: Engine, http: FastifyInstance, settings: Settings, beforeStop: () => Promise<void>): Promise<Hookline> {
  try {
    const { generatedApiKey } = await engine.ensureDefaultProject();
    const url = await http.listen({ host: settings.host, port: settings.port });
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        await beforeStop();
        await engine.stop();
        await http.close();
      })());
    return { engine, http, url, generatedApiKey, close };
  } catch (error) {
    await beforeStop().catch(() => {});
    await engine.stop();
    throw error;
  }
}
