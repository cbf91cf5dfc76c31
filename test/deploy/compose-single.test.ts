import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HooklineClient } from '../../src/sdk/index.js';
import { freePort } from '../helpers/nats.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { ROOT, composeCommand, docker, run, withoutPorts } from './docker.js';

/**
 * compose.yaml (one node) as the README runs it, with an override putting it on the host's network
 * on a free port of 127.0.0.1. Without HOOKLINE_API_KEY in the shell the node makes a key and prints
 * it in the compose logs; it delivers; `down` and `up` again keep everything (the named volume);
 * `down -v` removes it.
 */

const suffix = randomBytes(4).toString('hex');
const project = `hookline-single-test-${suffix}`;
const work = makeTempDir('hookline-single-compose-');
let compose: string[];
let env: NodeJS.ProcessEnv;
let port: number;
let receiver: Receiver;

async function composeRun(args: string[], files = ['-f', join(work.path, 'stack.yaml')]): Promise<string> {
  const [command, ...rest] = compose;
  const result = await run(command!, [...rest, '-p', project, ...files, ...args], { env });
  if (result.status !== 0) throw new Error(`${compose.join(' ')} ${args.join(' ')} exited ${result.status}:\n${result.stderr.slice(-4000)}`);
  return `${result.stdout}${result.stderr}`.trim();
}

const ready = () => waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).then((answer) => answer.status, () => 0)) === 200, { timeoutMs: 60_000, intervalMs: 200, message: 'the compose node ready' });

beforeAll(async () => {
  compose = await composeCommand();
  port = await freePort();
  receiver = await startReceiver({ autoClose: false });
  const { HOOKLINE_API_KEY: _unset, HOOKLINE_ADMIN_KEY: _alsoUnset, ...shell } = process.env;
  env = { ...shell, HOOKLINE_IMAGE: inject('hooklineImage'), HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1' };
  const override = join(work.path, 'hostnet.yaml');
  writeFileSync(override, `services:\n  hookline:\n    network_mode: host\n    environment:\n      HOOKLINE_HOST: 127.0.0.1\n      HOOKLINE_PORT: "${port}"\n`);
  const resolved = await composeRun(['config'], ['-f', join(ROOT, 'compose.yaml'), '-f', override]);
  const stack = withoutPorts(resolved);
  expect(stack).toContain('network_mode: host');
  expect(stack).not.toMatch(/\bports:/);
  writeFileSync(join(work.path, 'stack.yaml'), stack);
  await composeRun(['up', '-d', '--no-build']);
});

afterAll(async () => {
  await receiver?.close();
  if (compose) await composeRun(['down', '-v', '--timeout', '30']).catch((error: unknown) => console.error(error));
  const left = await run('docker', ['volume', 'ls', '-q', '--filter', `name=${project}`]);
  if (left.stdout.trim()) console.error(`volumes left behind: ${left.stdout}`);
  work.remove();
});

describe('compose.yaml (one node)', () => {
  let apiKey = '';
  let client: HooklineClient;
  let deliveryId = '';

  it('serves with the key it printed in the compose logs, stops gracefully after 30 s at most, and delivers', async () => {
    await ready();
    const logs = await waitFor(async () => {
      const text = await composeRun(['logs', '--no-color', 'hookline']);
      return /API key of project "default"[^:]*: (hk_\S+)/.exec(text);
    }, { timeoutMs: 10_000, intervalMs: 200, message: 'the generated API key in the compose logs' });
    apiKey = logs[1]!;
    client = new HooklineClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey });

    const id = (await composeRun(['ps', '-q', 'hookline'])).split('\n').at(-1)!;
    expect(await docker(['inspect', '--format', '{{.Config.StopTimeout}} {{.HostConfig.RestartPolicy.Name}}', id])).toBe('30 unless-stopped');
    expect(await docker(['inspect', '--format', '{{range .Mounts}}{{.Type}}:{{.Destination}}{{end}}', id])).toBe('volume:/data');

    await client.configureWebhook({ callbackUrl: `${receiver.url}/hooks`, status: 'active', eventTypes: ['service.trigger.event'] });
    receiver.secret = (await client.getSecret()).secret;
    const sent = await client.sendEvent({ id: `evt_single_${suffix}`, type: 'service.trigger.event', data: { compose: true } });
    deliveryId = sent.deliveryId!;
    const arrived = await waitFor(() => receiver.received.find((delivery) => delivery.envelope.id === sent.id), { timeoutMs: 15_000, message: 'the delivery at the receiver' });
    expect(arrived.verified).toBe(true);
  });

  it('keeps the project and its deliveries across `down` and `up` (the named volume)', async () => {
    await composeRun(['down', '--timeout', '30']);
    await composeRun(['up', '-d', '--no-build']);
    await ready();
    expect((await client.getDelivery(deliveryId)).status).toBe('succeeded');
    const logs = await composeRun(['logs', '--no-color', 'hookline']);
    expect(logs).not.toContain('API key of project'); // made once, on the first start only
  });
});
