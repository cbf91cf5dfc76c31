import { hostname } from 'node:os';
import { z } from 'zod';
import { HooklineError } from '../errors.js';
import { SVIX_RETRY_SCHEDULE_MS, parseByteSize, parseDuration, parseRetrySchedule } from './duration.js';

/** Every setting of a Hookline node, resolved from the environment (see the README's table). */
export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  /** Key of the project `default`; when unset and the project is new, one is generated and printed. */
  apiKey: string | null;
  /** Enables the admin routes when set. */
  adminKey: string | null;
  /** Delay before each attempt of a round; its length is the number of attempts per round. */
  retrySchedule: readonly number[];
  retryJitter: boolean;
  deliveryTimeoutMs: number;
  allowPrivateNetworks: boolean;
  maxBodyBytes: number;
  natsUrl: string | null;
  /** JetStream stream, subject prefix and durable consumer of the NATS transport. */
  natsStream: string;
  natsSubjectPrefix: string;
  natsDurable: string;
  /** Cluster mode (needs natsUrl): several nodes share projects by partition. */
  cluster: boolean;
  /** This node's name in the cluster; stable across restarts. */
  nodeId: string;
  /** Partitions of the project space; fixed for the life of a cluster. */
  partitions: number;
  /** How long a partition lease (and a node's heartbeat) lasts without renewal. */
  leaseMs: number;
  /** Subject root of the cluster's own traffic: changelog and request routing. */
  clusterSubjectPrefix: string;
  /** How long terminal deliveries are kept for the log API. */
  retentionMs: number;
  /** An endpoint whose every attempt failed for this long is disabled. */
  disableAfterMs: number;
  /** Attempts in flight to one endpoint at most. */
  endpointConcurrency: number;
  /** API requests per second per project (token bucket, bursts of one second); 0 turns it off. */
  rateLimit: number;
  /** Deliveries held in memory at most; beyond it ingest answers 503. */
  maxLiveDeliveries: number;
  /** Size of the data directory above which ingest answers 503; 0 for no limit. */
  maxDataBytes: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

const flag = z.enum(['0', '1', 'true', 'false']).transform((value) => value === '1' || value === 'true');
const optionalText = z.string().min(1).optional().transform((value) => value ?? null);

function parsed<T>(parse: (text: string) => T) {
  return z.string().transform((text, context) => {
    try {
      return parse(text);
    } catch (error) {
      context.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });
}

const environmentSchema = z.object({
  HOOKLINE_HOST: z.string().min(1).default('127.0.0.1'),
  HOOKLINE_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOOKLINE_DATA_DIR: z.string().min(1).default('./data'),
  HOOKLINE_API_KEY: optionalText,
  HOOKLINE_ADMIN_KEY: optionalText,
  HOOKLINE_RETRY_SCHEDULE: parsed(parseRetrySchedule).optional(),
  HOOKLINE_RETRY_JITTER: flag.default(true),
  HOOKLINE_DELIVERY_TIMEOUT: parsed(parseDuration).default(15_000),
  HOOKLINE_ALLOW_PRIVATE_NETWORKS: flag.default(false),
  HOOKLINE_MAX_BODY: parsed(parseByteSize).default(262_144),
  HOOKLINE_NATS_URL: optionalText,
  HOOKLINE_NATS_STREAM: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only').default('HOOKLINE_EVENTS'),
  HOOKLINE_NATS_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'dot-separated tokens without wildcards').default('hookline.events'),
  HOOKLINE_CLUSTER: flag.default(false),
  HOOKLINE_NODE_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only').optional(),
  HOOKLINE_PARTITIONS: z.coerce.number().int().min(1).max(1024).default(64),
  HOOKLINE_LEASE_TTL: parsed(parseDuration).default(5_000),
  HOOKLINE_CLUSTER_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'dot-separated tokens without wildcards').default('hookline.cluster'),
  HOOKLINE_NATS_DURABLE: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only').default('hookline'),
  HOOKLINE_RETENTION: parsed(parseDuration).default(30 * 24 * 3600_000),
  HOOKLINE_DISABLE_AFTER: parsed(parseDuration).default(5 * 24 * 3600_000),
  HOOKLINE_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(50),
  HOOKLINE_RATE_LIMIT: z.coerce.number().int().min(0).default(20_000),
  HOOKLINE_MAX_LIVE_DELIVERIES: z.coerce.number().int().min(1).default(1_000_000),
  HOOKLINE_MAX_DATA_SIZE: parsed(parseByteSize).default(0),
  HOOKLINE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Reads settings from environment variables, failing with every bad variable named. */
export function settingsFromEnvironment(environment: Record<string, string | undefined> = process.env): Settings {
  const relevant = Object.fromEntries(Object.entries(environment).filter(([name, value]) => name.startsWith('HOOKLINE_') && value !== ''));
  const result = environmentSchema.safeParse(relevant);
  if (!result.success) {
    const details = result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
    const summary = details.map((detail) => `${detail.path}: ${detail.message}`).join('; ');
    throw new HooklineError('HOOKLINE_ERR_CONFIG', `invalid settings: ${summary}`, { details });
  }
  const env = result.data;
  if (env.HOOKLINE_CLUSTER && !env.HOOKLINE_NATS_URL) {
    throw new HooklineError('HOOKLINE_ERR_CONFIG', 'invalid settings: HOOKLINE_CLUSTER=1 needs HOOKLINE_NATS_URL (the cluster is connected by NATS)', { details: [{ path: 'HOOKLINE_CLUSTER', message: 'requires HOOKLINE_NATS_URL' }] });
  }
  return {
    host: env.HOOKLINE_HOST,
    port: env.HOOKLINE_PORT,
    dataDir: env.HOOKLINE_DATA_DIR,
    apiKey: env.HOOKLINE_API_KEY,
    adminKey: env.HOOKLINE_ADMIN_KEY,
    retrySchedule: env.HOOKLINE_RETRY_SCHEDULE ?? SVIX_RETRY_SCHEDULE_MS,
    retryJitter: env.HOOKLINE_RETRY_JITTER,
    deliveryTimeoutMs: env.HOOKLINE_DELIVERY_TIMEOUT,
    allowPrivateNetworks: env.HOOKLINE_ALLOW_PRIVATE_NETWORKS,
    maxBodyBytes: env.HOOKLINE_MAX_BODY,
    natsUrl: env.HOOKLINE_NATS_URL,
    natsStream: env.HOOKLINE_NATS_STREAM,
    natsSubjectPrefix: env.HOOKLINE_NATS_SUBJECT_PREFIX,
    natsDurable: env.HOOKLINE_NATS_DURABLE,
    cluster: env.HOOKLINE_CLUSTER,
    nodeId: env.HOOKLINE_NODE_ID ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 40)}-${env.HOOKLINE_PORT}`,
    partitions: env.HOOKLINE_PARTITIONS,
    leaseMs: env.HOOKLINE_LEASE_TTL,
    clusterSubjectPrefix: env.HOOKLINE_CLUSTER_SUBJECT_PREFIX,
    retentionMs: env.HOOKLINE_RETENTION,
    disableAfterMs: env.HOOKLINE_DISABLE_AFTER,
    endpointConcurrency: env.HOOKLINE_ENDPOINT_CONCURRENCY,
    rateLimit: env.HOOKLINE_RATE_LIMIT,
    maxLiveDeliveries: env.HOOKLINE_MAX_LIVE_DELIVERIES,
    maxDataBytes: env.HOOKLINE_MAX_DATA_SIZE,
    logLevel: env.HOOKLINE_LOG_LEVEL,
  };
}

/** Settings for tests and embedding: the defaults with some overridden. */
export function defaultSettings(overrides: Partial<Settings> = {}): Settings {
  return { ...settingsFromEnvironment({}), ...overrides };
}
