import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Settings } from '../../src/config/settings.js';
import type { SendEventInput } from '../../src/sdk/index.js';
import { publishEvent, type PublishEventResult } from '../../src/sdk/nats.js';
import { makeTempDir } from './temp-dir.js';
import { waitFor } from './wait-for.js';
import { afterAll, afterEach, beforeAll } from 'vitest';

/** The shared NATS (JetStream enabled) every test may use; never stopped by a test. */
export const SHARED_NATS_URL = process.env.HOOKLINE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** Stream, subject prefix and durable of one test, with a random suffix so tests never share them. */
export interface NatsNames {
  natsStream: string;
  natsSubjectPrefix: string;
  natsDurable: string;
}

export function uniqueNatsNames(): NatsNames {
  const suffix = randomBytes(5).toString('hex');
  return { natsStream: `HL_TEST_${suffix}`, natsSubjectPrefix: `hltest.${suffix}.events`, natsDurable: `hookline_${suffix}` };
}

/**
 * The settings overrides that point a test Hookline at `url` with `names`. The receiver timeout is
 * raised from the helpers' 500 ms: Hookline, receiver and publisher share one process (and the
 * machine a nats-server), and a burst's first requests (cold undici connections) can exceed 500 ms,
 * which would show as a retried delivery where the tests count exactly one per event.
 */
export function natsSettings(url: string, names: NatsNames): Partial<Settings> {
  return { natsUrl: url, ...names, deliveryTimeoutMs: 5_000 };
}

/** A publisher connection; reconnects forever so it survives a restarted server. */
export function connectNats(url: string): Promise<NatsConnection> {
  return connect({ servers: url, name: 'hookline-test', reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 3_000 });
}

/**
 * Deletes streams of the test, ignoring ones already gone. For afterEach: pass the names the
 * test created and a live connection to their server.
 */
export async function deleteStreams(connection: NatsConnection, streams: Iterable<string>): Promise<void> {
  const manager = await jetstreamManager(connection);
  for (const stream of streams) await manager.streams.delete(stream).catch(() => false);
}

/**
 * Consumer info once the durable has acked (or terminated) everything in the stream: nothing
 * pending, nothing awaiting ack, the delivered and ack-floor stream sequences at the last one.
 */
export function waitForConsumerDrained(manager: JetStreamManager, names: NatsNames, timeoutMs = 5_000): Promise<ConsumerInfo> {
  return waitFor(
    async () => {
      const stream = await manager.streams.info(names.natsStream);
      const consumer = await manager.consumers.info(names.natsStream, names.natsDurable);
      const last = stream.state.last_seq;
      const drained = consumer.num_pending === 0 && consumer.num_ack_pending === 0 && consumer.delivered.stream_seq === last && consumer.ack_floor.stream_seq === last;
      return drained ? consumer : null;
    },
    { timeoutMs, intervalMs: 25, message: `consumer ${names.natsDurable} on ${names.natsStream} to ack everything` },
  );
}

/** What a test file of the NATS transport shares: a connection to the shared JetStream and its manager, set in `beforeAll`. */
export interface SharedJetStream {
  nc: NatsConnection;
  manager: JetStreamManager;
  /** Streams a test made: deleted after it. */
  readonly streams: Set<string>;
  /** Transports a test started: stopped after it, before its streams are deleted. */
  readonly transports: Array<{ stop(): Promise<void> }>;
}

/**
 * Registers the file's hooks: connects to the shared JetStream before its tests, stops each test's
 * transports and deletes its streams after it, and closes the connection at the end.
 */
export function useSharedJetStream(): SharedJetStream {
  const shared = { streams: new Set<string>(), transports: [] } as unknown as SharedJetStream;
  beforeAll(async () => {
    shared.nc = await connectNats(SHARED_NATS_URL);
    shared.manager = await jetstreamManager(shared.nc);
  });
  afterEach(async () => {
    for (const transport of shared.transports.splice(0)) await transport.stop();
    await deleteStreams(shared.nc, shared.streams);
    shared.streams.clear();
  });
  afterAll(async () => {
    await shared.nc?.close();
  });
  return shared;
}

/**
 * Publishes with the SDK until JetStream acks, retrying every failure (timeouts, no responders,
 * a connection that is reconnecting) until `deadline`. Only an acked publish counts as published.
 */
export async function publishUntilAcked(connection: NatsConnection, projectId: string, event: SendEventInput & { id: string }, subjectPrefix: string, deadline: number, partitions?: number): Promise<PublishEventResult> {
  for (;;) {
    try {
      // A publish sent to a server that then died is never answered: give up on it quickly and resend.
      return await publishEvent(connection, projectId, event, { subjectPrefix, timeoutMs: 1_000, ...(partitions !== undefined ? { partitions } : {}) });
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`publish of ${event.id} never acked: ${(error as Error).message}`, { cause: error });
      await new Promise<void>((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** Ports `freePort` has handed out in this process: never handed out twice. */
const portsHandedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 right now, and not handed out before by this process: each call
 * binds and closes port 0, so calls made together could get the same one (a NATS cluster's
 * server then got its client port as its route port too, and exited: "address already in use").
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (portsHandedOut.has(port)) continue;
    portsHandedOut.add(port);
    return port;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/**
 * A private nats-server child (`-js`, its own port and store directory), for tests that kill or
 * restart the server: the shared one on 4222 is never touched. `kill9()` then `start()` brings it
 * back on the same port and store, as a crashed server would be restarted.
 */
export interface OwnNatsServer {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  start(): Promise<void>;
  /** SIGKILL, no shutdown: the store is left as a crash leaves it. Resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM: an orderly shutdown, as for a planned restart. Resolves once the process is gone. */
  stop(): Promise<void>;
  /** Empties the store directory (server stopped): a restart then has no streams, as a server that lost its disk. */
  clearStore(): void;
  /** Kills it (if running) and removes its store. */
  dispose(): Promise<void>;
}

/** One nats-server child that can be started, killed and started again on the same arguments (port, store). */
export interface NatsServerProcess {
  readonly running: boolean;
  /** Resolves once it logs that it is ready and its client port accepts; rejects if it exits first. */
  start(): Promise<void>;
  /** Sends `name`; resolves once the process is gone. */
  signal(name: NodeJS.Signals): Promise<void>;
}

export function natsServerProcess(args: string[], label: string, port: number): NatsServerProcess {
  let child: ChildProcess | null = null;
  let output = '';
  return {
    get running() {
      return child !== null;
    },
    async start() {
      if (child) throw new Error(`${label} already running`);
      output = '';
      const started = spawn('nats-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      started.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child = started;
      started.once('exit', () => {
        if (child === started) child = null;
      });
      // Ready once it logs so (JetStream included) and the port accepts; fail fast if it exits.
      const exited = once(started, 'exit').then(() => {
        throw new Error(`${label} exited: ${output}`);
      });
      exited.catch(() => {});
      await Promise.race([
        exited,
        waitFor(async () => child === started && output.includes('Server is ready') && (await accepts(port)), { timeoutMs: 20_000, intervalMs: 20, message: `${label} to be ready` }),
      ]);
    },
    async signal(name) {
      const running = child;
      if (!running) return;
      const exited = once(running, 'exit');
      running.kill(name);
      await exited;
    },
  };
}

/**
 * A JetStream nats-server child whose only client credential is a token, on ports and a store of
 * its own under `dir`. Not started: `restartWith(token)` (re)starts it with that token, as a config
 * rollout would. Its monitoring endpoint lists the connections it closed since it started, each
 * with the client's name and why. `process.signal('SIGKILL')` ends it.
 */
export interface TokenNatsServer {
  readonly url: string;
  readonly process: NatsServerProcess;
  restartWith(token: string): Promise<void>;
  /** How many connections named `name` the server refused (`Authentication Failure`) since it started. */
  refusals(name: string): Promise<number>;
}

export async function tokenNatsServer(dir: string): Promise<TokenNatsServer> {
  const port = await freePort();
  const monitorPort = await freePort();
  const configFile = join(dir, 'nats.conf');
  const serverProcess = natsServerProcess(['-c', configFile, '-m', String(monitorPort)], `nats-server on ${port}`, port);
  return {
    url: `nats://127.0.0.1:${port}`,
    process: serverProcess,
    async restartWith(token) {
      await serverProcess.signal('SIGTERM');
      writeFileSync(configFile, [`listen: 127.0.0.1:${port}`, `jetstream { store_dir: "${join(dir, 'store')}" }`, `authorization { token: "${token}" }`].join('\n'));
      await serverProcess.start();
    },
    async refusals(name) {
      const response = await fetch(`http://127.0.0.1:${monitorPort}/connz?state=closed`);
      const { connections } = (await response.json()) as { connections: Array<{ name?: string; reason?: string }> };
      return connections.filter((connection) => connection.name === name && connection.reason === 'Authentication Failure').length;
    },
  };
}

export async function startOwnNatsServer(): Promise<OwnNatsServer> {
  const port = await freePort();
  const store = makeTempDir('hookline-nats-');
  const serverProcess = natsServerProcess(['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store.path], `nats-server on ${port}`, port);
  const server: OwnNatsServer = {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir: store.path,
    start: () => serverProcess.start(),
    kill9: () => serverProcess.signal('SIGKILL'),
    clearStore() {
      if (serverProcess.running) throw new Error('stop nats-server before clearing its store');
      for (const entry of readdirSync(store.path)) rmSync(join(store.path, entry), { recursive: true, force: true });
    },
    stop: () => serverProcess.signal('SIGTERM'),
    async dispose() {
      await server.kill9();
      store.remove();
    },
  };
  await server.start();
  return server;
}

/** A publisher that keeps publishing until stopped; only acked publishes count as published. */
export interface ContinuousPublisher {
  /** Ids whose publish JetStream acked. */
  readonly acked: Set<string>;
  /** Ids ever attempted (acked or not): anything received must be among them. */
  readonly attempted: Set<string>;
  /** Stops starting new publishes; resolves when the in-flight ones are acked (or failed past the deadline). */
  stop(): Promise<void>;
}

/**
 * Publishes `evt_<tag>_<n>` events for `projectId` (or each of several in turn; on a cluster's
 * subjects when `partitions` is given) with `concurrency` publishes in flight, each retried
 * until acked (so it rides out a server that is down or restarting), until `stop()`.
 */
export function startContinuousPublisher(
  connection: NatsConnection,
  options: { projectId: string | string[]; subjectPrefix: string; tag: string; concurrency?: number; deadlineMs?: number; partitions?: number },
): ContinuousPublisher {
  const projects = typeof options.projectId === 'string' ? [options.projectId] : options.projectId;
  const acked = new Set<string>();
  const attempted = new Set<string>();
  const deadline = Date.now() + (options.deadlineMs ?? 30_000);
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped) {
      const n = next++;
      const id = `evt_${options.tag}_${n}`;
      attempted.add(id);
      await publishUntilAcked(connection, projects[n % projects.length]!, { id, type: 'service.trigger.event', data: { id } }, options.subjectPrefix, deadline, options.partitions);
      acked.add(id);
    }
  };
  const workers = Array.from({ length: options.concurrency ?? 8 }, worker);
  return {
    acked,
    attempted,
    async stop() {
      stopped = true;
      await Promise.all(workers);
    },
  };
}
