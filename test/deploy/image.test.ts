import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HooklineClient } from '../../src/sdk/index.js';
import { freePort } from '../helpers/nats.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { containerState, docker, removeQuietly, run } from './docker.js';

/**
 * The image as an operator runs it (README, "Deployment"): `docker run` with a volume on /data,
 * here with host networking and a free port on 127.0.0.1. One container serves and delivers to a
 * receiver on the host; `docker stop` (SIGTERM) while an attempt is in flight drains it; a new
 * container on the same volume carries on with the same project, webhook and deliveries.
 */

const image = inject('hooklineImage');
const suffix = randomBytes(4).toString('hex');
const volume = `hookline-deploy-test-${suffix}`;
const first = `hookline-deploy-test-${suffix}-1`;
const second = `hookline-deploy-test-${suffix}-2`;
const API_KEY = `deploy-${suffix}`;
/** The drain's bound: in-flight attempts finish within the delivery timeout. */
const DELIVERY_TIMEOUT_MS = 10_000;
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

let port: number;
let baseUrl: string;
let receiver: Receiver;
let client: HooklineClient;

async function runContainer(name: string, env: Record<string, string>): Promise<void> {
  const envArgs = Object.entries({
    HOOKLINE_HOST: '127.0.0.1', // the image's 0.0.0.0 would listen beyond loopback on the host network
    HOOKLINE_PORT: String(port),
    HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1', // the receiver is on 127.0.0.1
    HOOKLINE_DELIVERY_TIMEOUT: `${DELIVERY_TIMEOUT_MS / 1000}s`,
    ...env,
  }).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
  await docker(['run', '-d', '--name', name, '--network', 'host', '-v', `${volume}:/data`, '--health-interval', '1s', '--health-start-period', '0s', ...envArgs, image]);
  await waitFor(
    async () => {
      const state = await containerState(name);
      if (!state.Running) throw new Error(`container ${name} is ${state.Status} (exit ${state.ExitCode}):\n${(await run('docker', ['logs', name])).stderr}`);
      return (await fetch(`${baseUrl}/readyz`)).status === 200;
    },
    { timeoutMs: 60_000, intervalMs: 200, message: `${name} ready on ${baseUrl}` },
  );
}

beforeAll(async () => {
  port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  receiver = await startReceiver({ autoClose: false });
  client = new HooklineClient({ baseUrl, apiKey: API_KEY });
});

afterAll(async () => {
  await receiver?.close();
  await removeQuietly([first, second], [volume]);
});

describe('the image', () => {
  it('is the runtime stage alone: dist/, production dependencies and package.json, as a non-root user, with the documented defaults', async () => {
    const [config] = JSON.parse(await docker(['image', 'inspect', image])) as [{ Config: { User: string; Env: string[]; ExposedPorts: object; Volumes: object; Entrypoint: string[]; Cmd: string[]; Healthcheck: { Test: string[] } } }];
    expect(config.Config.User).toBe('hookline:hookline');
    expect(config.Config.Env).toEqual(expect.arrayContaining(['HOOKLINE_HOST=0.0.0.0', 'HOOKLINE_PORT=8080', 'HOOKLINE_DATA_DIR=/data', 'NODE_ENV=production']));
    expect(Object.keys(config.Config.ExposedPorts)).toEqual(['8080/tcp']);
    expect(Object.keys(config.Config.Volumes)).toEqual(['/data']);
    expect(config.Config.Entrypoint).toEqual(['node', '/app/dist/cli/main.js']);
    expect(config.Config.Cmd).toEqual(['serve']);
    expect(config.Config.Healthcheck.Test.join(' ')).toContain('/healthz');

    // Inside: what /app holds, which dev tools are absent, and whether any file is the CA bundle
    // npm was given at build time (it must be in no layer).
    const caSize = statSync(CA_BUNDLE).size;
    const caHash = createHash('sha256').update(readFileSync(CA_BUNDLE)).digest('hex');
    const probe = `
      const fs = require('node:fs'), path = require('node:path'), crypto = require('node:crypto');
      const same = [];
      const walk = (dir) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const full = path.join(dir, entry.name);
          if (entry.isDirectory()) { if (!['/proc', '/sys', '/dev'].includes(full)) walk(full); }
          else if (entry.isFile() && fs.statSync(full).size === ${caSize}
            && crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex') === '${caHash}') same.push(full);
        }
      };
      walk('/');
      const has = (p) => fs.existsSync(path.join('/app', p));
      console.log(JSON.stringify({
        app: fs.readdirSync('/app').sort(),
        devTools: ['typescript', 'vitest', 'esbuild', 'playwright-core', 'preact', 'svix'].filter((name) => has('node_modules/' + name)),
        runtime: ['fastify', 'lmdb', 'xstate', '@nats-io/transport-node', 'fs-native-extensions'].filter((name) => has('node_modules/' + name)),
        ui: has('dist/ui/index.html'),
        caCopies: same,
        uid: process.getuid(),
      }));`;
    const inside = JSON.parse(await docker(['run', '--rm', '--network', 'none', '--user', 'root', '--entrypoint', 'node', image, '-e', probe])) as Record<string, unknown>;
    expect(inside.app).toEqual(['dist', 'node_modules', 'package.json']);
    expect(inside.devTools).toEqual([]);
    expect(inside.runtime).toEqual(['fastify', 'lmdb', 'xstate', '@nats-io/transport-node', 'fs-native-extensions']);
    expect(inside.ui).toBe(true);
    expect(inside.caCopies).toEqual([]);
    const history = await docker(['history', '--no-trunc', '--format', '{{.CreatedBy}}', image]);
    expect(history).not.toContain('npm_ca');
  });

  it('serves with host networking, passes its HEALTHCHECK as a non-root PID 1, and a delivery to a receiver on the host verifies', async () => {
    await runContainer(first, { HOOKLINE_API_KEY: API_KEY });
    await waitFor(async () => (await containerState(first)).Health?.Status === 'healthy', { timeoutMs: 30_000, intervalMs: 250, message: 'the HEALTHCHECK to report healthy' });
    expect(await docker(['exec', first, 'sh', '-c', 'tr "\\0" " " </proc/1/cmdline'])).toBe('node /app/dist/cli/main.js serve');
    expect(await docker(['exec', first, 'id', '-u'])).toBe('10001');

    await client.configureWebhook({ callbackUrl: `${receiver.url}/webhooks`, status: 'active', eventTypes: ['service.trigger.event'] });
    receiver.secret = (await client.getSecret()).secret;
    const sent = await client.sendEvent({ id: `evt_deploy_${suffix}_1`, type: 'service.trigger.event', data: { hello: 'container' } });
    const arrived = await waitFor(() => receiver.received.find((delivery) => delivery.envelope.id === sent.id), { timeoutMs: 15_000, message: 'the delivery at the receiver' });
    expect(arrived.verified).toBe(true);
    expect(arrived.webhookId).toBe(sent.deliveryId);
    expect(arrived.envelope.data).toEqual({ hello: 'container' });
    await waitFor(async () => (await client.getDelivery(sent.deliveryId!)).status === 'succeeded', { timeoutMs: 10_000, message: 'the delivery succeeded' });
  });

  let drainedDeliveryId = '';

  it('drains on SIGTERM (docker stop): the attempt in flight finishes, and the container exits 0 within the delivery timeout', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.respond = async (delivery) => {
      if (delivery.envelope.id === `evt_deploy_${suffix}_slow`) await held;
      return { status: 204 };
    };
    const slow = await client.sendEvent({ id: `evt_deploy_${suffix}_slow`, type: 'service.trigger.event', data: { slow: true } });
    drainedDeliveryId = slow.deliveryId!;
    await waitFor(() => receiver.byWebhookId(slow.deliveryId!).length === 1, { timeoutMs: 15_000, message: 'the slow attempt at the receiver' });

    const stopStarted = Date.now();
    const stopping = run('docker', ['stop', '--time', '60', first]);
    // Draining, not gone: readiness says so while the attempt is still held by the receiver.
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 503, { timeoutMs: 5_000, message: '/readyz answering 503 while draining' });
    expect((await containerState(first)).Running).toBe(true);
    release();
    const stopped = await stopping;
    const took = Date.now() - stopStarted;
    expect(stopped.status).toBe(0);
    const state = await containerState(first);
    expect(state.ExitCode).toBe(0);
    expect(took).toBeLessThan(DELIVERY_TIMEOUT_MS);
    const logs = await run('docker', ['logs', first]);
    expect(logs.stdout + logs.stderr).toContain('draining');
  });

  it('keeps its data in the volume: a replacement container has the project, the webhook and every delivery, and delivers on', async () => {
    await docker(['rm', first]);
    await runContainer(second, {}); // no HOOKLINE_API_KEY: the key works because the project is in /data
    const webhook = await client.getWebhook();
    expect(webhook.callbackUrl).toBe(`${receiver.url}/webhooks`);
    const drained = await client.getDelivery(drainedDeliveryId);
    expect(drained.status).toBe('succeeded');
    expect(drained.attemptLog).toHaveLength(1);
    expect(receiver.byWebhookId(drainedDeliveryId)).toHaveLength(1); // finished before the exit, not attempted again
    const page = await client.listDeliveriesPage({ limit: 10 });
    expect(page.data.map((delivery) => delivery.eventId).sort()).toEqual([`evt_deploy_${suffix}_1`, `evt_deploy_${suffix}_slow`]);

    const after = await client.sendEvent({ id: `evt_deploy_${suffix}_after`, type: 'service.trigger.event', data: { after: 'replacement' } });
    const arrived = await waitFor(() => receiver.received.find((delivery) => delivery.envelope.id === after.id), { timeoutMs: 15_000, message: 'the delivery from the replacement container' });
    expect(arrived.verified).toBe(true); // the same signing secret, read from the volume
  });
});
