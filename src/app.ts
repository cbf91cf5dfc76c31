import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Logger as PinoLogger } from 'pino';
import { Engine } from './actors/engine.js';
import type { EngineOptions } from './actors/engine.js';
import type { Settings } from './config/settings.js';
import { buildHttpServer } from './http/server.js';
import { EmbeddedTransport } from './transport/embedded.js';
import { NatsTransport } from './transport/nats.js';

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
  const embedded = new EmbeddedTransport();
  const transports = [embedded, ...(options.transports ?? [])];
  if (settings.natsUrl) {
    transports.push(new NatsTransport({ servers: settings.natsUrl, stream: settings.natsStream, subjectPrefix: settings.natsSubjectPrefix, durable: settings.natsDurable, logger }));
  }
  const engine = await Engine.start({ ...options, settings, logger, transports });
  const http = buildHttpServer({ engine, embedded }, { logger });
  try {
    const { generatedApiKey } = await engine.ensureDefaultProject();
    const url = await http.listen({ host: settings.host, port: settings.port });
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        await engine.stop();
        await http.close();
      })());
    return { engine, http, url, generatedApiKey, close };
  } catch (error) {
    await engine.stop();
    throw error;
  }
}
