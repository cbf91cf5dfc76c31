import { hostname } from 'node:os';
import { z } from 'zod';
import { outcomeSubjectRoot } from '../sdk/outcomes.js';
import { HooklineError } from '../errors.js';
import { tracingSettingsFrom } from '../tracing/tracing-settings.js';
import type { TracingSettings } from '../tracing/tracing-settings.js';
import { seedUrls } from '../transport/nats-seeds.js';
import { RETRY_SCHEDULE_FORMAT, SVIX_RETRY_SCHEDULE_MS, parseByteSize, parseDuration, parseRetrySchedule } from './duration.js';

/** Entries a partition's changelog takes after its snapshot before the next is due, at the least. */
export const DEFAULT_CHANGELOG_SNAPSHOT_EVERY = 100_000;

/** Every setting of a Hookline node, resolved from the environment (see the README's table). */
export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  /** Key of the project `default`; when unset and the project is new, one is generated and printed. */
  apiKey: string | null;
  /** Enables the admin routes when set. */
  adminKey: string | null;
  /** Origins whose pages may embed the dashboard opened by a portal link (CSP `frame-ancestors`); none when empty. */
  portalFrameAncestors: readonly string[];
  /** OpenTelemetry traces, from the OTEL_* variables (tracing/tracing-settings.ts); null: off. */
  tracing: TracingSettings | null;
  /** Delay before each attempt of a round; its length is the number of attempts per round. */
  retrySchedule: readonly number[];
  retryJitter: boolean;
  deliveryTimeoutMs: number;
  allowPrivateNetworks: boolean;
  maxBodyBytes: number;
  /** Largest body of `POST /v1/events/batch`; each event in it is still held to `maxBodyBytes`. */
  maxBatchBodyBytes: number;
  natsUrl: string | null;
  /** JetStream stream, subject prefix and durable consumer of the NATS transport. */
  natsStream: string;
  natsSubjectPrefix: string;
  natsDurable: string;
  /** NATS user/password authentication (HOOKLINE_NATS_USER, HOOKLINE_NATS_PASSWORD). */
  natsUser: string | null;
  natsPassword: string | null;
  /** NATS token authentication. */
  natsToken: string | null;
  /** Path of a file holding an nkey seed (`SU…`). */
  natsNkeyFile: string | null;
  /** Path of a `.creds` file: user JWT and nkey seed (decentralised auth). */
  natsCredsFile: string | null;
  /** CA bundle (PEM) verifying the NATS servers; setting it requires TLS. */
  natsTlsCa: string | null;
  /** Client certificate and key (PEM) for mutual TLS. */
  natsTlsCert: string | null;
  natsTlsKey: string | null;
  /** Replicas of every stream and KV bucket Hookline creates. */
  natsReplicas: number;
  /** HOOKLINE_NATS_OUTCOMES: final outcomes and endpoint changes published on `<root>.outcomes.>` (sdk/outcomes.ts). */
  natsOutcomes: boolean;
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
  /** Entries a partition's changelog takes after its snapshot before the next, at the least. */
  changelogSnapshotEvery: number;
  /** How long terminal deliveries are kept for the log API. */
  retentionMs: number;
  /** An endpoint whose every attempt failed for this long is disabled. */
  disableAfterMs: number;
  /** Attempts in flight to one endpoint at most. */
  endpointConcurrency: number;
  /** Counted failures in a row that open an endpoint's circuit breaker; 0 turns the breaker off. */
  circuitFailures: number;
  /** Wait between probes of an open circuit (a receiver's Retry-After may lengthen it). */
  circuitProbeIntervalMs: number;
  /** API requests per second per project (token bucket, bursts of one second); 0 turns it off. */
  rateLimit: number;
  /** Waiting deliveries (not yet final) one project may have; beyond it that project's ingest and recovery answer 503. */
  maxWaitingPerProject: number;
  /** Waiting deliveries of one project held in memory at most; the rest wait on disk. */
  deliveryWindow: number;
  /** Size of the data directory above which ingest answers 503; 0 for no limit. */
  maxDataBytes: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A setting parsed from its text. `expected` completes the sentence an operator reads when the
 * value is wrong: `HOOKLINE_PORT must be a whole number 0-65535, got "abc"` (the variable's name is
 * put in front by settingsFromEnvironment). `parse` returns undefined, or throws, on a bad value.
 */
function setting<T>(expected: string, parse: (text: string) => T | undefined) {
  return z.string().transform((text, context) => {
    let value: T | undefined;
    try {
      value = parse(text.trim());
    } catch {
      value = undefined;
    }
    if (value === undefined) {
      context.addIssue({ code: 'custom', message: `must be ${expected}, got ${JSON.stringify(text)}` });
      return z.NEVER;
    }
    return value;
  });
}

function wholeNumber(min: number, max?: number) {
  return setting(max === undefined ? `a whole number ${min} or more` : `a whole number ${min}-${max}`, (text) => {
    const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    return value >= min && (max === undefined || value <= max) ? value : undefined;
  });
}

function matching(pattern: RegExp, expected: string) {
  return setting(expected, (text) => (pattern.test(text) ? text : undefined));
}

const FLAG_VALUES: Record<string, boolean> = { '1': true, true: true, '0': false, false: false };
const flag = setting('1, 0, true or false', (text) => FLAG_VALUES[text.toLowerCase()]);
const duration = setting('a duration: a whole number with an optional unit ms, s, m, h or d, such as 250ms, 15s, 5m or 2h', parseDuration);
const byteSize = setting('a size: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb or 1gb', parseByteSize);
/** Node's longest timer (2^31 - 1 ms, about 24.8 days): a longer one fires at once, with a warning. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A duration a timer waits (an attempt's timeout, a lease): 0 would end every one at once. */
const timerDuration = setting('a duration from 1ms to 24d (Node\'s longest timer), such as 15s', (text) => {
  const ms = parseDuration(text);
  return ms >= 1 && ms <= MAX_TIMER_MS ? ms : undefined;
});
/** A body limit: 0 would refuse every request. */
const bodyLimit = setting('a size of at least 1 byte: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb', (text) => {
  const bytes = parseByteSize(text);
  return bytes >= 1 ? bytes : undefined;
});
const name = matching(/^[A-Za-z0-9_-]{1,64}$/, '1 to 64 letters, digits, _ or -');
const subjectPrefix = matching(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'dot-separated words of letters, digits, _ or - without wildcards, such as hookline.events');
const optionalText = z.string().min(1).optional().transform((value) => value ?? null);
/** A CSP source naming an origin: scheme, host (its first label may be `*`) and an optional port. */
const FRAME_ANCESTOR = /^https?:\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:(\d{1,5}|\*))?$/;
const frameAncestors = setting('origins separated by spaces or commas, each a scheme, a host (its first label may be *) and an optional port, such as https://app.example.com https://*.example.org', (text) => {
  const origins = text.split(/[\s,]+/).filter((origin) => origin !== '');
  return origins.length > 0 && origins.every((origin) => FRAME_ANCESTOR.test(origin)) ? origins : undefined;
});

const environmentSchema = z.object({
  HOOKLINE_HOST: z.string().min(1).default('127.0.0.1'),
  HOOKLINE_PORT: wholeNumber(0, 65535).default(8080),
  HOOKLINE_DATA_DIR: z.string().min(1).default('./data'),
  HOOKLINE_API_KEY: optionalText,
  HOOKLINE_ADMIN_KEY: optionalText,
  HOOKLINE_PORTAL_FRAME_ANCESTORS: frameAncestors.optional(),
  HOOKLINE_RETRY_SCHEDULE: setting(RETRY_SCHEDULE_FORMAT, parseRetrySchedule).optional(),
  HOOKLINE_RETRY_JITTER: flag.default(true),
  HOOKLINE_DELIVERY_TIMEOUT: timerDuration.default(15_000),
  HOOKLINE_ALLOW_PRIVATE_NETWORKS: flag.default(false),
  HOOKLINE_MAX_BODY: bodyLimit.default(262_144),
  HOOKLINE_MAX_BATCH_BODY: bodyLimit.default(4 * 1024 * 1024),
  HOOKLINE_NATS_URL: optionalText,
  HOOKLINE_NATS_STREAM: name.default('HOOKLINE_EVENTS'),
  HOOKLINE_NATS_SUBJECT_PREFIX: subjectPrefix.default('hookline.events'),
  HOOKLINE_NATS_USER: optionalText,
  HOOKLINE_NATS_PASSWORD: optionalText,
  HOOKLINE_NATS_TOKEN: optionalText,
  HOOKLINE_NATS_NKEY: optionalText,
  HOOKLINE_NATS_CREDS: optionalText,
  HOOKLINE_NATS_TLS_CA: optionalText,
  HOOKLINE_NATS_TLS_CERT: optionalText,
  HOOKLINE_NATS_TLS_KEY: optionalText,
  HOOKLINE_NATS_REPLICAS: wholeNumber(1, 5).default(1),
  HOOKLINE_NATS_OUTCOMES: flag.default(false),
  HOOKLINE_CLUSTER: flag.default(false),
  HOOKLINE_NODE_ID: name.optional(),
  HOOKLINE_PARTITIONS: wholeNumber(1, 1024).default(64),
  HOOKLINE_LEASE_TTL: timerDuration.default(5_000),
  HOOKLINE_CLUSTER_SUBJECT_PREFIX: subjectPrefix.default('hookline.cluster'),
  HOOKLINE_CHANGELOG_SNAPSHOT_EVERY: wholeNumber(1).default(DEFAULT_CHANGELOG_SNAPSHOT_EVERY),
  HOOKLINE_NATS_DURABLE: name.default('hookline'),
  HOOKLINE_RETENTION: duration.default(30 * 24 * 3600_000),
  HOOKLINE_DISABLE_AFTER: duration.default(5 * 24 * 3600_000),
  HOOKLINE_ENDPOINT_CONCURRENCY: wholeNumber(1, 10_000).default(50),
  HOOKLINE_CIRCUIT_FAILURES: wholeNumber(0, 1_000_000).default(10),
  HOOKLINE_CIRCUIT_PROBE_INTERVAL: timerDuration.default(5_000),
  HOOKLINE_RATE_LIMIT: wholeNumber(0).default(20_000),
  HOOKLINE_MAX_WAITING_PER_PROJECT: wholeNumber(1).default(10_000_000),
  HOOKLINE_DELIVERY_WINDOW: wholeNumber(1).default(10_000),
  HOOKLINE_MAX_DATA_SIZE: byteSize.default(0),
  HOOKLINE_LOG_LEVEL: setting(`one of ${LOG_LEVELS.join(', ')}`, (text) => LOG_LEVELS.find((level) => level === text)).default('info'),
});

/** Settings of earlier versions, with what a start that sets one is told instead of "not a setting". */
const RETIRED_SETTINGS: Readonly<Record<string, string>> = {
  HOOKLINE_MAX_LIVE_DELIVERIES:
    'HOOKLINE_MAX_LIVE_DELIVERIES is retired and ignored: waiting deliveries now wait on disk (memory holds those due soon), and the limit is per project, HOOKLINE_MAX_WAITING_PER_PROJECT (default 10000000); set that instead',
};

/** HOOKLINE_* variables that other commands and scripts read: not settings of `serve`, not typos. */
const OTHER_KNOWN_VARIABLES = ['HOOKLINE_URL', 'HOOKLINE_DEBUG', 'HOOKLINE_NODE_CACHE'];

/** Typos further than this from every known name are reported without a suggestion. */
const MAX_SUGGESTION_DISTANCE = 3;

/**
 * One warning for each HOOKLINE_* variable that is no setting, with the closest known name, e.g.
 * `HOOKLINE_PROT is not a Hookline setting and is ignored; did you mean HOOKLINE_PORT?`. A typo
 * would otherwise leave the default in force without a word.
 */
export function unknownSettingWarnings(environment: Record<string, string | undefined> = process.env): string[] {
  const known = [...Object.keys(environmentSchema.shape), ...OTHER_KNOWN_VARIABLES];
  return Object.keys(environment)
    .filter((variable) => variable.startsWith('HOOKLINE_') && !known.includes(variable))
    .sort()
    .map((variable) => {
      const retired = RETIRED_SETTINGS[variable];
      if (retired) return retired;
      const [closest] = known.map((candidate) => ({ candidate, distance: editDistance(variable, candidate) })).sort((a, b) => a.distance - b.distance);
      const suggestion = closest && closest.distance <= MAX_SUGGESTION_DISTANCE ? `; did you mean ${closest.candidate}?` : '; see the README\'s Settings for the names';
      return `${variable} is not a Hookline setting and is ignored${suggestion}`;
    });
}

/** Levenshtein distance: insertions, deletions and substitutions of one character each cost 1. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

type EnvironmentSettings = z.output<typeof environmentSchema>;

/**
 * One setting, read from `environment` exactly as settingsFromEnvironment reads it (empty is unset,
 * then its default), for tools that must wait or size as a node configured so would; or the line
 * that names what is wrong with it.
 */
export function environmentSetting<K extends keyof EnvironmentSettings>(name: K, environment: Readonly<Record<string, string | undefined>>): { ok: true; value: EnvironmentSettings[K] } | { ok: false; problem: string } {
  const text = environment[name];
  const result = environmentSchema.shape[name].safeParse(text === '' ? undefined : text);
  return result.success ? { ok: true, value: result.data as EnvironmentSettings[K] } : { ok: false, problem: `${name} ${result.error.issues[0]!.message}` };
}

/** Reads settings from environment variables, failing with every bad variable named. */
export function settingsFromEnvironment(environment: Record<string, string | undefined> = process.env): Settings {
  const relevant = Object.fromEntries(Object.entries(environment).filter(([name, value]) => name.startsWith('HOOKLINE_') && value !== ''));
  const result = environmentSchema.safeParse(relevant);
  if (!result.success) {
    const details = result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: `${issue.path.join('.')} ${issue.message}` }));
    throw new HooklineError('HOOKLINE_ERR_CONFIG', details.map((detail) => detail.message).join('; '), { details });
  }
  const env = result.data;
  if (env.HOOKLINE_CLUSTER && !env.HOOKLINE_NATS_URL) {
    throw new HooklineError('HOOKLINE_ERR_CONFIG', 'cluster mode (--cluster or HOOKLINE_CLUSTER=1) needs HOOKLINE_NATS_URL: the nodes of a cluster talk through NATS; set it to your NATS server, e.g. nats://127.0.0.1:4222', { details: [{ path: 'HOOKLINE_CLUSTER', message: 'requires HOOKLINE_NATS_URL' }] });
  }
  if (env.HOOKLINE_NATS_OUTCOMES && !env.HOOKLINE_NATS_URL) {
    throw new HooklineError('HOOKLINE_ERR_CONFIG', 'HOOKLINE_NATS_OUTCOMES=1 needs HOOKLINE_NATS_URL: outcomes are published to NATS JetStream; set HOOKLINE_NATS_URL (NATS or cluster mode), or unset HOOKLINE_NATS_OUTCOMES', { details: [{ path: 'HOOKLINE_NATS_OUTCOMES', message: 'requires HOOKLINE_NATS_URL' }] });
  }
  if (env.HOOKLINE_NATS_OUTCOMES) checkOutcomeSubjects(env.HOOKLINE_NATS_SUBJECT_PREFIX, env.HOOKLINE_CLUSTER_SUBJECT_PREFIX);
  checkNatsAuthSettings(env);
  return {
    host: env.HOOKLINE_HOST,
    port: env.HOOKLINE_PORT,
    dataDir: env.HOOKLINE_DATA_DIR,
    apiKey: env.HOOKLINE_API_KEY,
    adminKey: env.HOOKLINE_ADMIN_KEY,
    portalFrameAncestors: env.HOOKLINE_PORTAL_FRAME_ANCESTORS ?? [],
    tracing: tracingSettingsFrom(environment),
    retrySchedule: env.HOOKLINE_RETRY_SCHEDULE ?? SVIX_RETRY_SCHEDULE_MS,
    retryJitter: env.HOOKLINE_RETRY_JITTER,
    deliveryTimeoutMs: env.HOOKLINE_DELIVERY_TIMEOUT,
    allowPrivateNetworks: env.HOOKLINE_ALLOW_PRIVATE_NETWORKS,
    maxBodyBytes: env.HOOKLINE_MAX_BODY,
    maxBatchBodyBytes: env.HOOKLINE_MAX_BATCH_BODY,
    natsUrl: env.HOOKLINE_NATS_URL,
    natsStream: env.HOOKLINE_NATS_STREAM,
    natsSubjectPrefix: env.HOOKLINE_NATS_SUBJECT_PREFIX,
    natsDurable: env.HOOKLINE_NATS_DURABLE,
    natsUser: env.HOOKLINE_NATS_USER,
    natsPassword: env.HOOKLINE_NATS_PASSWORD,
    natsToken: env.HOOKLINE_NATS_TOKEN,
    natsNkeyFile: env.HOOKLINE_NATS_NKEY,
    natsCredsFile: env.HOOKLINE_NATS_CREDS,
    natsTlsCa: env.HOOKLINE_NATS_TLS_CA,
    natsTlsCert: env.HOOKLINE_NATS_TLS_CERT,
    natsTlsKey: env.HOOKLINE_NATS_TLS_KEY,
    natsReplicas: env.HOOKLINE_NATS_REPLICAS,
    natsOutcomes: env.HOOKLINE_NATS_OUTCOMES,
    cluster: env.HOOKLINE_CLUSTER,
    nodeId: env.HOOKLINE_NODE_ID ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 40)}-${env.HOOKLINE_PORT}`,
    partitions: env.HOOKLINE_PARTITIONS,
    leaseMs: env.HOOKLINE_LEASE_TTL,
    clusterSubjectPrefix: env.HOOKLINE_CLUSTER_SUBJECT_PREFIX,
    changelogSnapshotEvery: env.HOOKLINE_CHANGELOG_SNAPSHOT_EVERY,
    retentionMs: env.HOOKLINE_RETENTION,
    disableAfterMs: env.HOOKLINE_DISABLE_AFTER,
    endpointConcurrency: env.HOOKLINE_ENDPOINT_CONCURRENCY,
    circuitFailures: env.HOOKLINE_CIRCUIT_FAILURES,
    circuitProbeIntervalMs: env.HOOKLINE_CIRCUIT_PROBE_INTERVAL,
    rateLimit: env.HOOKLINE_RATE_LIMIT,
    maxWaitingPerProject: env.HOOKLINE_MAX_WAITING_PER_PROJECT,
    deliveryWindow: env.HOOKLINE_DELIVERY_WINDOW,
    maxDataBytes: env.HOOKLINE_MAX_DATA_SIZE,
    logLevel: env.HOOKLINE_LOG_LEVEL,
  };
}

/**
 * NATS authentication takes one mode; two at once (a token and a creds file, say) would leave the
 * operator guessing which one the server saw, so the start names both instead.
 */
function checkNatsAuthSettings(env: z.infer<typeof environmentSchema>): void {
  const fail = (setting: string, message: string) => {
    throw new HooklineError('HOOKLINE_ERR_CONFIG', `${setting} ${message}`, { details: [{ path: setting, message }] });
  };
  if (env.HOOKLINE_NATS_PASSWORD && !env.HOOKLINE_NATS_USER) fail('HOOKLINE_NATS_PASSWORD', 'needs HOOKLINE_NATS_USER: set the user the password belongs to');
  if (env.HOOKLINE_NATS_USER && !env.HOOKLINE_NATS_PASSWORD) fail('HOOKLINE_NATS_USER', 'needs HOOKLINE_NATS_PASSWORD: set the user\'s password');
  // Credentials in the URL (nats://user:pass@host, nats://token@host) are a mode too, listed first.
  const urlCredentials = (env.HOOKLINE_NATS_URL ? seedUrls(env.HOOKLINE_NATS_URL) : []).some((seed) => seed.userInfo !== null);
  const modes = [...(urlCredentials ? ['HOOKLINE_NATS_URL'] : []), ...(['HOOKLINE_NATS_USER', 'HOOKLINE_NATS_TOKEN', 'HOOKLINE_NATS_NKEY', 'HOOKLINE_NATS_CREDS'] as const).filter((name) => env[name])];
  if (modes.length > 1) fail(modes[1]!, `cannot be combined with ${modes[0] === 'HOOKLINE_NATS_URL' ? 'the credentials in HOOKLINE_NATS_URL' : modes[0]}: NATS authenticates a client one way; keep the one your server expects`);
  if (Boolean(env.HOOKLINE_NATS_TLS_CERT) !== Boolean(env.HOOKLINE_NATS_TLS_KEY)) {
    fail(env.HOOKLINE_NATS_TLS_CERT ? 'HOOKLINE_NATS_TLS_CERT' : 'HOOKLINE_NATS_TLS_KEY', 'needs its pair: mutual TLS takes both HOOKLINE_NATS_TLS_CERT (the client certificate) and HOOKLINE_NATS_TLS_KEY (its private key)');
  }
}

/** Settings for tests and embedding: the defaults with some overridden. */
export function defaultSettings(overrides: Partial<Settings> = {}): Settings {
  return { ...settingsFromEnvironment({}), ...overrides };
}

/**
 * Outcomes go on `<root>.outcomes.>` (sdk/outcomes.ts): a subject prefix whose events or cluster
 * traffic would share those subjects is refused, since one stream would take the other's messages
 * (a one-token prefix `hookline` takes `hookline.>`, outcomes included).
 */
function checkOutcomeSubjects(subjectPrefix: string, clusterSubjectPrefix: string): void {
  const outcomes = `${outcomeSubjectRoot(subjectPrefix)}.outcomes`;
  const overlaps = (prefix: string) => outcomes === prefix || outcomes.startsWith(`${prefix}.`) || prefix.startsWith(`${outcomes}.`);
  for (const [name, prefix, example] of [['HOOKLINE_NATS_SUBJECT_PREFIX', subjectPrefix, 'hookline.events'], ['HOOKLINE_CLUSTER_SUBJECT_PREFIX', clusterSubjectPrefix, 'hookline.cluster']] as const) {
    if (!overlaps(prefix)) continue;
    const problem = `${prefix} shares subjects with the outcomes HOOKLINE_NATS_OUTCOMES=1 publishes on ${outcomes}.>, and one stream would take the other's messages; choose one of two tokens or more beside them (e.g. ${example})`;
    throw new HooklineError('HOOKLINE_ERR_CONFIG', `${name}=${problem}`, { details: [{ path: name, message: problem }] });
  }
}
