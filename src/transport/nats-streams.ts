import { jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerConfig, ConsumerInfo, JetStreamManager, StreamConfig, StreamInfo } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { HooklineError } from '../errors.js';

/**
 * Creating the streams and KV buckets Hookline needs, safely from several nodes at once: nodes
 * started together race to create the same stream, and a JetStream API request can time out while
 * a NATS cluster elects a meta leader or places a replicated stream (three nodes started together
 * failed 1 of 2 tries with a timeout). Creating is therefore read-then-create, retried on a timeout
 * or a lost race until `SETUP_DEADLINE_MS`; what exists is checked for the replica count asked for,
 * not silently used with another. "jetstream is not enabled" (nobody answered the JetStream API)
 * is retried too: a server with JetStream cut off from its cluster's other servers answers so
 * (`npm run nemesis`, seed 1: a node restarted then took it for a server without JetStream and
 * exited), as does a replicated stream without a leader yet (`withLeader` waits for one). A server
 * without JetStream says so in its greeting, and `reachJetStream` reports it at once.
 */

/**
 * Where a retried setup step is reported: a node that keeps retrying is otherwise silent for up to
 * `SETUP_DEADLINE_MS` a step, and a start that seems to hang must say which step it waits on.
 */
export type SetupLog = Pick<Logger, 'warn'>;

/** How long creating one stream or bucket may keep retrying. */
export const SETUP_DEADLINE_MS = 30_000;

/** How long placing a replicated stream may keep failing (servers of the cluster still starting). */
const PLACEMENT_DEADLINE_MS = 8_000;

/** A failure that another try may not meet: a timeout, a leader election, a race lost to another node. */
function isTransient(error: unknown): boolean {
  const { code, message, name } = error as { code?: unknown; message?: unknown; name?: unknown };
  const text = `${String(name)} ${String(message)}`.toLowerCase();
  // 10058: stream name already in use (another node created it a moment ago, config not yet equal).
  return code === 10058 || code === 10008 || text.includes('timeout') || text.includes('temporarily unavailable') || text.includes('already in use') || text.includes('leader') || text.includes('jetstream is not enabled') || text.includes('no responders') || isPlacement(error);
}

/** JetStream could not put the replicas anywhere: fewer servers with JetStream up than replicas (10005, 10023). */
function isPlacement(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10005 || code === 10023 || /no suitable peers|insufficient resources/i.test(String(message));
}

/** A replica count the NATS servers cannot hold, as the setting's one line; null for other failures. */
function replicaError(error: unknown, kind: 'stream' | 'KV bucket', name: string, replicas: number): HooklineError | null {
  const { code, message } = error as { code?: unknown; message?: unknown };
  let problem: string;
  if (code === 10074 || /not supported in non-clustered mode/i.test(String(message))) problem = 'the NATS server is not part of a cluster, so it keeps one copy of each stream';
  else if (isPlacement(error)) problem = `fewer than ${replicas} NATS servers with JetStream are up in the cluster (${String(message)})`;
  else return null;
  const line = `cannot keep ${replicas} replicas of the ${kind} ${name}: ${problem}; set it to at most the number of NATS servers, or start them`;
  return new HooklineError('HOOKLINE_ERR_CONFIG', `HOOKLINE_NATS_REPLICAS=${replicas}: ${line}`, { cause: error, details: [{ path: 'HOOKLINE_NATS_REPLICAS', message: line }] });
}

function isNotFound(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 10059 || code === 10014 || /(stream|consumer) not found/i.test(String(message));
}

/**
 * Runs one setup step, trying again on a transient failure (a timeout, a leader election) until
 * `SETUP_DEADLINE_MS`; a step still failing then throws an error naming what it waited for.
 */
export async function retrying<T>(what: string, attempt: () => Promise<T>, log: SetupLog | undefined): Promise<T> {
  const started = Date.now();
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const deadline = started + (isPlacement(error) ? PLACEMENT_DEADLINE_MS : SETUP_DEADLINE_MS);
      if (!isTransient(error) || Date.now() > deadline) {
        if (isTransient(error)) throw new Error(`${what}: still failing after ${(deadline - started) / 1000} s (${(error as Error).message})`, { cause: error });
        throw error;
      }
      log?.warn({ err: error, tries: tries + 1, waitedMs: Date.now() - started }, `${what}: failed, retrying`);
      await new Promise<void>((resolve) => setTimeout(resolve, Math.min(100 * 2 ** tries, 2_000) * (0.5 + Math.random())));
    }
  }
}

/**
 * A stream or bucket made earlier with another replica count: reported, since using it would give
 * less (or more) durability than HOOKLINE_NATS_REPLICAS promises.
 */
function checkReplicas(kind: 'stream' | 'KV bucket', name: string, stream: string, info: StreamInfo, replicas: number): void {
  const actual = info.config.num_replicas || 1;
  if (actual === replicas) return;
  const problem = `the ${kind} ${name} exists with ${actual} replica${actual === 1 ? '' : 's'}; change it to ${replicas} (nats stream edit ${stream} --replicas ${replicas}) or set HOOKLINE_NATS_REPLICAS=${actual}`;
  throw new HooklineError('HOOKLINE_ERR_CONFIG', `HOOKLINE_NATS_REPLICAS=${replicas}: ${problem}`, { details: [{ path: 'HOOKLINE_NATS_REPLICAS', message: problem }] });
}

/**
 * A JetStream manager; making one asks the server for the account's JetStream, which can time out
 * like any API call while the cluster is busy, so it is retried too (no JetStream at all is not).
 */
export async function reachJetStream(connection: NatsConnection, log?: SetupLog): Promise<JetStreamManager> {
  // The server's greeting says whether it runs JetStream: one without it is not waited for.
  if (connection.info && !connection.info.jetstream) throw Object.assign(new Error('jetstream is not enabled'), { name: 'JetStreamNotEnabled' });
  return retrying('reaching JetStream', () => jetstreamManager(connection), log);
}

/**
 * A replicated stream takes writes only once it has a leader, and one just made (or on a NATS
 * cluster just started) may have none for a moment: its first write then meets "no responders",
 * which nats.js reports as "jetstream is not enabled". Waits for the leader, as long as a setup may.
 */
async function withLeader(manager: JetStreamManager, stream: string, info: StreamInfo, log: SetupLog | undefined): Promise<StreamInfo> {
  const deadline = Date.now() + SETUP_DEADLINE_MS;
  let current = info;
  while ((current.config.num_replicas || 1) > 1 && !current.cluster?.leader) {
    if (Date.now() > deadline) throw new Error(`stream ${stream} has no leader after ${SETUP_DEADLINE_MS / 1000} s; check that the NATS servers are routed to each other`);
    await new Promise<void>((resolve) => setTimeout(resolve, 100));
    current = await retrying(`reading stream ${stream}`, () => manager.streams.info(stream), log);
  }
  return current;
}

/** The stream's info, creating it with `config` when absent; one that exists is used as it is, but for its replica count. */
export async function ensureStream(manager: JetStreamManager, config: Partial<StreamConfig> & { name: string; num_replicas: number }, log?: SetupLog): Promise<StreamInfo> {
  const info = await retrying(`creating stream ${config.name}`, async () => {
    const existing = await manager.streams.info(config.name).catch((error: unknown) => {
      if (isNotFound(error)) return null;
      throw error;
    });
    return existing ?? (await manager.streams.add(config));
  }, log).catch((error: unknown) => {
    throw replicaError(error, 'stream', config.name, config.num_replicas) ?? error;
  });
  checkReplicas('stream', config.name, config.name, info, config.num_replicas);
  return withLeader(manager, config.name, info, log);
}

/** The KV bucket, created when absent with one value per key and `replicas`; `manager` is `connection`'s. */
export async function ensureKv(connection: NatsConnection, manager: JetStreamManager, bucket: string, replicas: number, log?: SetupLog): Promise<KV> {
  const stream = `KV_${bucket}`;
  const kv = await retrying(`creating KV bucket ${bucket}`, () => new Kvm(connection).create(bucket, { history: 1, replicas }), log).catch((error: unknown) => {
    throw replicaError(error, 'KV bucket', bucket, replicas) ?? error;
  });
  const info = await retrying(`reading KV bucket ${bucket}`, () => manager.streams.info(stream), log);
  checkReplicas('KV bucket', bucket, stream, info, replicas);
  await withLeader(manager, stream, info, log);
  return kv;
}

/**
 * Lists a KV bucket's keys matching a filter from its stream's subject list: one request that the
 * stream leader answers. `kv.keys()` creates an ephemeral consumer instead, a proposal to the
 * JetStream meta group on a replicated cluster, too dear for a read made on every tick, and left
 * running when the caller stops waiting. Deleted keys are listed too (their marker is a message).
 */
export function kvKeyLister(manager: JetStreamManager, bucket: string): (filter: string) => Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  return async (filter) => {
    const info = await manager.streams.info(`KV_${bucket}`, { subjects_filter: prefix + filter });
    return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  };
}

/** The consumer's info, or null when the stream has no such consumer (any other failure throws). */
export function consumerInfo(manager: JetStreamManager, stream: string, name: string): Promise<ConsumerInfo | null> {
  return manager.consumers.info(stream, name).catch((error: unknown) => {
    if (isNotFound(error)) return null;
    throw error;
  });
}

/** Deletes the consumer; one already gone (a retry whose first answer was lost) is no failure. */
export async function deleteConsumer(manager: JetStreamManager, stream: string, name: string): Promise<void> {
  await manager.consumers.delete(stream, name).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}

/**
 * The durable consumer, created with `config` when absent. An existing one is used as it is, but
 * for the fields of `enforced` (a cluster node's partition consumers hold fewer unacknowledged
 * messages than earlier versions made them with), which are set where they differ.
 */
export async function ensureConsumer(manager: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }, log?: SetupLog, enforced: Partial<ConsumerConfig> = {}): Promise<void> {
  await retrying(`creating consumer ${config.durable_name} on ${stream}`, async () => {
    const existing = await consumerInfo(manager, stream, config.durable_name);
    if (!existing) await manager.consumers.add(stream, config);
    else if (Object.entries(enforced).some(([field, value]) => existing.config[field as keyof ConsumerConfig] !== value)) {
      await manager.consumers.update(stream, config.durable_name, enforced);
    }
  }, log);
}
