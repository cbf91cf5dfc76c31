import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { HooklineClient } from '../../src/sdk/index.js';
import type { HooklineApiError } from '../../src/sdk/index.js';
import { partitionOf } from '../../src/sdk/partition.js';
import { freePort } from '../helpers/nats.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { ROOT, composeCommand, containerState, docker, run, withoutPorts } from './docker.js';

/**
 * deploy/cluster/compose.yaml as the README runs it (secrets from make-secrets.sh, images given by
 * NATS_IMAGE and HOOKLINE_IMAGE), with compose.hostnet.yaml putting every container on the host's
 * network on free ports of 127.0.0.1. The stack comes up (three Hookline nodes, three NATS servers
 * with TLS, client certificates, a password and replicas 3), replaces a project's API key with the
 * CLI run in a node's container, takes events, and loses none it acknowledged when the node owning
 * the project and one NATS server are killed (`docker kill`).
 */

const PARTITIONS = 64;
const suffix = randomBytes(4).toString('hex');
const project = `hookline-cluster-test-${suffix}`;
const secrets = makeTempDir('hookline-cluster-secrets-');
/** compose.yaml with compose.hostnet.yaml over it, resolved by `compose config`, less its published ports (see `withoutPorts`). */
const stackFile = join(secrets.path, 'stack.yaml');
const composeFiles = ['-f', stackFile];
const ports: Record<string, number> = {};
let env: NodeJS.ProcessEnv;
let compose: string[]; // `docker compose` or Debian's `docker-compose`
let adminKey = '';
let receiver: Receiver;

const nodeUrl = (n: number) => `http://127.0.0.1:${ports[`HOOKLINE_PORT_${n}`]}`;

async function composeRun(args: string[], files = composeFiles): Promise<string> {
  const [command, ...rest] = compose;
  const result = await run(command!, [...rest, '-p', project, ...files, ...args], { env });
  if (result.status !== 0) throw new Error(`${compose.join(' ')} ${args.join(' ')} exited ${result.status}:\n${result.stderr.slice(-4000)}`);
  return result.stdout.trim();
}

async function containerOf(service: string): Promise<string> {
  const id = (await composeRun(['ps', '-q', service])).split('\n')[0];
  if (!id) throw new Error(`no container for ${service}`);
  return id;
}

interface Health {
  status: string;
  cluster?: { nodeId: string; partitions: number[]; partitionCount: number };
}

async function health(n: number): Promise<Health | null> {
  try {
    const answer = await fetch(`${nodeUrl(n)}/healthz`, { signal: AbortSignal.timeout(5_000) });
    return answer.ok ? ((await answer.json()) as Health) : null;
  } catch {
    return null;
  }
}

/** Every partition owned by exactly one of `nodes`, each of them ready. */
async function partitionsSettled(nodes: number[]): Promise<boolean> {
  const owned: number[] = [];
  for (const n of nodes) {
    const ready = await fetch(`${nodeUrl(n)}/readyz`).then((answer) => answer.status === 200, () => false);
    const status = await health(n);
    if (!ready || !status?.cluster) return false;
    owned.push(...status.cluster.partitions);
  }
  return owned.length === PARTITIONS && new Set(owned).size === PARTITIONS;
}

async function natsMonitor<T>(n: number, path: string): Promise<T> {
  const answer = await fetch(`http://127.0.0.1:${ports[`NATS_HTTP_PORT_${n}`]}${path}`);
  return (await answer.json()) as T;
}

beforeAll(async () => {
  compose = await composeCommand();
  const made = await run('bash', [join(ROOT, 'deploy/cluster/make-secrets.sh'), secrets.path]);
  if (made.status !== 0) throw new Error(`make-secrets.sh failed:\n${made.stderr}`);
  const fromEnvFile = Object.fromEntries(
    readFileSync(join(secrets.path, '.env'), 'utf8')
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  adminKey = fromEnvFile.HOOKLINE_ADMIN_KEY!;
  for (const name of ['HOOKLINE_PORT', 'NATS_PORT', 'NATS_CLUSTER_PORT', 'NATS_HTTP_PORT']) {
    for (const n of [1, 2, 3]) ports[`${name}_${n}`] = await freePort();
  }
  env = {
    ...process.env,
    ...fromEnvFile,
    ...Object.fromEntries(Object.entries(ports).map(([key, value]) => [key, String(value)])),
    HOOKLINE_SECRETS_DIR: secrets.path,
    HOOKLINE_IMAGE: inject('hooklineImage'),
    NATS_IMAGE: inject('natsImage'),
    HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1', // the receiver is on 127.0.0.1
  };
  receiver = await startReceiver({ autoClose: false });
  const resolved = await composeRun(['config'], ['-f', join(ROOT, 'deploy/cluster/compose.yaml'), '-f', join(ROOT, 'deploy/cluster/compose.hostnet.yaml')]);
  const stack = withoutPorts(resolved);
  expect(stack.match(/network_mode: host/g)).toHaveLength(6);
  expect(stack).not.toMatch(/\bports:/);
  writeFileSync(stackFile, stack);
  await composeRun(['up', '-d', '--no-build']);
  try {
    await waitFor(() => partitionsSettled([1, 2, 3]), { timeoutMs: 120_000, intervalMs: 500, message: 'three nodes ready, the partitions spread over them' });
  } catch (error) {
    // A stack that never formed is diagnosed from each node's view and the containers' logs.
    for (const n of [1, 2, 3]) console.error(`hookline-${n} /healthz: ${JSON.stringify(await health(n))}`);
    await printComposeLogs(200);
    throw error;
  }
});

async function printComposeLogs(lines: number): Promise<void> {
  const [command, ...rest] = compose;
  const logs = await run(command!, [...rest, '-p', project, ...composeFiles, 'logs', '--no-color', '--tail', String(lines)], { env });
  console.error(`compose logs (last ${lines} lines of each):\n${logs.stdout}${logs.stderr}`);
}

afterEach(async (context) => {
  if (context.task.result?.state === 'fail') await printComposeLogs(40);
});

afterAll(async () => {
  await receiver?.close();
  if (compose && env) await composeRun(['down', '-v', '--timeout', '30']).catch((error: unknown) => console.error(error));
  secrets.remove();
});

describe('the cluster compose stack', () => {
  it('runs three NATS servers routed over TLS, taking only clients with a certificate from the CA and the password, and Hookline\'s streams with 3 replicas', async () => {
    for (const n of [1, 2, 3]) {
      const routes = await waitFor(async () => {
        const routez = await natsMonitor<{ num_routes: number }>(n, '/routez');
        return routez.num_routes >= 2 ? routez : null;
      }, { timeoutMs: 30_000, intervalMs: 250, message: `nats-${n} routed to the other two` });
      expect(routes.num_routes).toBeGreaterThanOrEqual(2);
      const varz = await natsMonitor<{ tls_required: boolean; tls_verify: boolean; auth_required: boolean; cluster: { tls_required: boolean; tls_verify: boolean } }>(n, '/varz');
      expect({ tls: varz.tls_required, verify: varz.tls_verify, auth: varz.auth_required }).toEqual({ tls: true, verify: true, auth: true });
      expect({ tls: varz.cluster.tls_required, verify: varz.cluster.tls_verify }).toEqual({ tls: true, verify: true });
    }

    const jsz = await natsMonitor<{ account_details?: { stream_detail?: { name: string; config?: { num_replicas: number }; cluster?: { replicas?: unknown[] } }[] }[] }>(1, '/jsz?accounts=true&streams=true&config=true');
    const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
    expect(streams.map((stream) => stream.name)).toEqual(expect.arrayContaining(['HOOKLINE_EVENTS', 'HOOKLINE_EVENTS_CHANGELOG']));
    for (const stream of streams) expect({ stream: stream.name, replicas: stream.config?.num_replicas }).toEqual({ stream: stream.name, replicas: 3 });

    // The secured part: each missing piece is refused.
    const ca = readFileSync(join(secrets.path, 'ca.pem'), 'utf8');
    const cert = readFileSync(join(secrets.path, 'hookline-client.pem'), 'utf8');
    const key = readFileSync(join(secrets.path, 'hookline-client-key.pem'), 'utf8');
    const server = `tls://127.0.0.1:${ports.NATS_PORT_1}`;
    const attempt = (options: object) => connect({ servers: server, timeout: 5_000, reconnect: false, ...options }).then(async (connection) => {
      await connection.close();
      return 'connected';
    }, (error: Error) => `refused: ${error.message}`);
    expect(await attempt({ tls: { ca }, user: 'hookline', pass: env.HOOKLINE_NATS_PASSWORD })).toMatch(/^refused/); // no client certificate
    expect(await attempt({ tls: { ca, cert, key }, user: 'hookline', pass: 'wrong' })).toMatch(/^refused/);
    expect(await attempt({ tls: { ca, cert, key } })).toMatch(/^refused/); // no password
    expect(await attempt({ servers: `nats://127.0.0.1:${ports.NATS_PORT_1}`, tls: undefined, user: 'hookline', pass: env.HOOKLINE_NATS_PASSWORD })).toMatch(/^refused/);
    expect(await attempt({ tls: { ca, cert, key }, user: 'hookline', pass: env.HOOKLINE_NATS_PASSWORD })).toBe('connected');
  });

  it('replaces a project\'s API key without a gap, as the README does it from a node\'s container: keys create, then keys revoke, over the secured NATS', async () => {
    const admin = await fetch(`${nodeUrl(1)}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'keys' }) });
    expect(admin.status).toBe(201);
    const { projectId, apiKey: oldKey } = (await admin.json()) as { projectId: string; apiKey: string };
    // The node's own environment (HOOKLINE_CLUSTER=1, its TLS and password) makes --cluster the default.
    const cli = (...args: string[]) => composeRun(['exec', '-T', 'hookline-1', 'node', '/app/dist/cli/main.js', 'keys', ...args]);
    const newKey = /\(shown once\): (hk_\S+)/.exec(await cli('create', '--project', projectId))?.[1];
    expect(newKey).toBeDefined();
    // A configured-or-not answer (404 webhook_not_configured) means the key was taken; 401 that it was not.
    const answer = (n: number, key: string) => fetch(`${nodeUrl(n)}/v1/webhook`, { headers: { authorization: `Bearer ${key}` } }).then((response) => response.status);
    for (const n of [1, 2, 3]) await waitFor(async () => (await answer(n, newKey!)) === 404, { timeoutMs: 15_000, intervalMs: 200, message: `the new key taken by node ${n}` });

    expect(await cli('revoke', '--key', oldKey)).toMatch(/^revoked a key of project "prj_\S+" in the cluster's directory \(KV HOOKLINE_EVENTS_directory on tls:\/\/[^)]+\); 1 key left$/);
    for (const n of [1, 2, 3]) {
      await waitFor(async () => (await answer(n, oldKey)) === 401, { timeoutMs: 15_000, intervalMs: 200, message: `the old key refused by node ${n}` });
      expect(await answer(n, newKey!)).toBe(404);
    }
  });

  it('takes events on every node, and loses none it acknowledged when the owning node and a NATS server are killed', async () => {
    const admin = await fetch(`${nodeUrl(1)}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'deploy' }) });
    expect(admin.status).toBe(201);
    const { projectId, apiKey } = (await admin.json()) as { projectId: string; apiKey: string };
    const clients = new Map([1, 2, 3].map((n) => [n, new HooklineClient({ baseUrl: nodeUrl(n), apiKey })]));
    // The key is in the directory every node mirrors: configure through a node that did not make it.
    await waitFor(() => clients.get(3)!.configureWebhook({ callbackUrl: `${receiver.url}/hooks`, status: 'active', eventTypes: ['service.trigger.event'] }), { timeoutMs: 15_000, intervalMs: 200, message: 'the new key working on node 3' });
    receiver.secret = (await clients.get(2)!.getSecret()).secret;

    const partition = partitionOf(projectId, PARTITIONS);
    const owner = (await Promise.all([1, 2, 3].map(async (n) => ((await health(n))?.cluster?.partitions.includes(partition) ? n : 0)))).find((n) => n > 0)!;
    expect(owner).toBeGreaterThan(0);

    const acked = new Set<string>();
    let live = [1, 2, 3];
    let sent = 0;
    let stop = false;
    const sender = async (lane: number) => {
      while (!stop) {
        const id = `evt_cluster_${suffix}_${lane}_${sent++}`;
        const node = live[sent % live.length]!;
        try {
          await clients.get(node)!.sendEvent({ id, type: 'service.trigger.event', data: { lane } });
          acked.add(id);
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 50)); // 503 partition_moving, a killed node: not acknowledged
        }
      }
    };
    const lanes = [0, 1, 2, 3].map((lane) => sender(lane));
    await waitFor(() => acked.size >= 100, { timeoutMs: 60_000, intervalMs: 50, message: '100 events acknowledged before the kills' });

    const killedNode = await containerOf(`hookline-${owner}`);
    const killedNats = await containerOf(`nats-${owner === 2 ? 3 : 2}`);
    live = [1, 2, 3].filter((n) => n !== owner);
    await docker(['kill', killedNode]);
    await docker(['kill', killedNats]);
    const ackedAtKill = acked.size;
    // The remaining nodes take the killed node's partitions over and go on acknowledging events.
    await waitFor(() => acked.size >= ackedAtKill + 200, { timeoutMs: 120_000, intervalMs: 100, message: '200 more events acknowledged after the kills' });
    stop = true;
    await Promise.all(lanes);
    expect((await containerState(killedNode)).Running).toBe(false);

    const missing = () => [...acked].filter((id) => !receiver.received.some((delivery) => delivery.envelope.id === id && delivery.verified));
    await waitFor(() => missing().length === 0, { timeoutMs: 120_000, intervalMs: 250, message: `every acknowledged event delivered and verified (of ${acked.size})` }).catch((error: Error) => {
      throw new Error(`${error.message}; missing ${missing().length}: ${missing().slice(0, 10).join(', ')}`);
    });
    expect(missing()).toEqual([]);
    console.info(`cluster stack: ${acked.size} events acknowledged (${ackedAtKill} before killing hookline-${owner} and a NATS server), all delivered and verified`);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);

    // Back: the killed containers restart and rejoin; the node takes events again.
    await docker(['start', killedNats, killedNode]);
    await waitFor(() => partitionsSettled([1, 2, 3]), { timeoutMs: 120_000, intervalMs: 500, message: 'the killed node back, the partitions spread over three nodes again' });
    // The partitions may still be settling their subscriptions: a 503 partition_moving is retried, as
    // the README tells clients to (the same id, so a retry is never a second event).
    const again = await waitFor(
      () => clients.get(owner)!.sendEvent({ id: `evt_cluster_${suffix}_back`, type: 'service.trigger.event', data: { back: true } }).catch((error: HooklineApiError) => {
        if (error.retryable) return null;
        throw error;
      }),
      { timeoutMs: 60_000, intervalMs: 500, message: 'the rejoined node to accept an event' },
    );
    await waitFor(() => receiver.received.find((delivery) => delivery.envelope.id === again.id && delivery.verified), { timeoutMs: 30_000, message: 'a delivery after the restart' });
  });
});
