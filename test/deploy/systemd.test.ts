import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HooklineClient } from '../../src/sdk/index.js';
import { freePort } from '../helpers/nats.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { ROOT, docker, removeQuietly, run } from './docker.js';

/**
 * deploy/systemd/hookline.service under a real systemd: a container of the base image with Debian's
 * systemd as PID 1 (this machine's init is not systemd), Hookline installed as the unit's comment
 * says (/opt/hookline, a `hookline` user, /etc/hookline/hookline.env), host networking on a free
 * port. The unit starts the server, its sandbox is in force, `systemctl stop` drains an attempt in
 * flight and ends in success, and a crash (SIGKILL) is restarted.
 */

const suffix = randomBytes(4).toString('hex');
const container = `hookline-systemd-test-${suffix}`;
const API_KEY = `systemd-${suffix}`;
let port: number;
let receiver: Receiver;
let client: HooklineClient;

const exec = (command: string) => docker(['exec', container, 'sh', '-c', command]);
const show = async (property: string) => exec(`systemctl show -p ${property} --value hookline`);

/** The base image with systemd installed from Debian's packages (once; reused by its tag). */
async function systemdImage(): Promise<string> {
  const base = inject('baseImage');
  const tag = `hookline-test/systemd:${base.split(':').at(-1)}`;
  if ((await run('docker', ['image', 'inspect', tag])).status === 0) return tag;
  const prep = `hookline-systemd-prep-${suffix}`;
  try {
    await docker(['run', '--name', prep, '--network', 'host', base, 'sh', '-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd systemd-sysv >/dev/null && rm -rf /var/lib/apt/lists/*']);
    await docker(['commit', '--change', 'CMD ["/sbin/init"]', prep, tag]);
  } finally {
    await removeQuietly([prep]);
  }
  return tag;
}

beforeAll(async () => {
  port = await freePort();
  receiver = await startReceiver({ autoClose: false });
  client = new HooklineClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY });
  const image = await systemdImage();
  // systemd needs its cgroup tree and the rights to set up each unit's namespaces (the sandbox).
  await docker([
    'run', '-d', '--name', container, '--network', 'host',
    '--cap-add', 'SYS_ADMIN', '--cap-add', 'SYS_PTRACE', '--security-opt', 'seccomp=unconfined', '--security-opt', 'apparmor=unconfined',
    '--tmpfs', '/run', '--tmpfs', '/run/lock', '-v', '/sys/fs/cgroup:/sys/fs/cgroup', image,
  ]);
  await waitFor(async () => ['running', 'degraded'].includes((await run('docker', ['exec', container, 'systemctl', 'is-system-running'])).stdout.trim()), { timeoutMs: 60_000, intervalMs: 250, message: 'systemd up in the container' });

  // Install as the unit's header says: the built package (the image's /app), Node at /usr/bin/node, the user, the settings.
  const source = await docker(['create', inject('hooklineImage')]);
  try {
    const copy = await run('sh', ['-c', `docker cp ${source}:/app - | docker cp - ${container}:/opt/`]);
    if (copy.status !== 0) throw new Error(`copying /app failed: ${copy.stderr}`);
  } finally {
    await removeQuietly([source]);
  }
  await exec([
    'mv /opt/app /opt/hookline',
    'ln -sf /usr/local/bin/node /usr/bin/node',
    'useradd --system --home-dir /var/lib/hookline --shell /usr/sbin/nologin hookline',
    'mkdir -p /etc/hookline',
    `printf 'HOOKLINE_PORT=${port}\\nHOOKLINE_API_KEY=${API_KEY}\\nHOOKLINE_ALLOW_PRIVATE_NETWORKS=1\\nHOOKLINE_DELIVERY_TIMEOUT=10s\\n' > /etc/hookline/hookline.env`,
  ].join(' && '));
  await docker(['cp', join(ROOT, 'deploy/systemd/hookline.service'), `${container}:/etc/systemd/system/hookline.service`]);
  await exec('systemctl daemon-reload && systemctl enable --now hookline');
});

afterAll(async () => {
  await receiver?.close();
  await removeQuietly([container]);
});

async function ready(): Promise<void> {
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).then((answer) => answer.status, () => 0)) === 200, { timeoutMs: 60_000, intervalMs: 200, message: 'the service ready' });
}

describe('the systemd unit', () => {
  it('starts the server as the hookline user inside its sandbox, and it delivers to a receiver that verifies', async () => {
    await ready();
    expect(await exec('systemctl is-enabled hookline')).toBe('enabled');
    const pid = await show('MainPID');
    expect(await exec(`tr '\\0' ' ' </proc/${pid}/cmdline`)).toBe('/usr/bin/node /opt/hookline/dist/cli/main.js serve');
    const status = await exec(`cat /proc/${pid}/status`);
    expect(status).toMatch(/^Uid:\s+(\d+)/m);
    expect(status.match(/^Uid:\s+(\d+)/m)![1]).toBe(await exec('id -u hookline'));
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^CapBnd:\s+0+$/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
    // ProtectSystem=strict with ReadWritePaths: in the service's mount namespace only the data dir is writable.
    const write = (path: string) => run('docker', ['exec', container, 'nsenter', '-t', pid, '-m', 'sh', '-c', `touch ${path} && rm ${path}`]);
    expect((await write('/opt/hookline/probe')).stderr).toContain('Read-only file system');
    expect((await write('/usr/probe')).stderr).toContain('Read-only file system');
    expect((await write('/var/lib/hookline/probe')).status).toBe(0);

    await client.configureWebhook({ callbackUrl: `${receiver.url}/hooks`, status: 'active', eventTypes: ['service.trigger.event'] });
    receiver.secret = (await client.getSecret()).secret;
    const sent = await client.sendEvent({ id: `evt_systemd_${suffix}`, type: 'service.trigger.event', data: { unit: 'hookline.service' } });
    const arrived = await waitFor(() => receiver.received.find((delivery) => delivery.envelope.id === sent.id), { timeoutMs: 15_000, message: 'the delivery at the receiver' });
    expect(arrived.verified).toBe(true);
  });

  it('restarts the server after a crash (SIGKILL), with its data', async () => {
    const before = await show('MainPID');
    await exec(`kill -9 ${before}`);
    await waitFor(async () => (await show('NRestarts')) === '1' && (await show('ActiveState')) === 'active', { timeoutMs: 30_000, intervalMs: 200, message: 'systemd restarting the service' });
    expect(await show('MainPID')).not.toBe(before);
    await ready();
    expect((await client.getWebhook()).callbackUrl).toBe(`${receiver.url}/hooks`);
  });

  it('systemctl stop drains: the attempt in flight finishes, the server exits 0 and the unit ends in success', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.respond = async (delivery) => {
      if (delivery.envelope.id === `evt_systemd_${suffix}_slow`) await held;
      return { status: 204 };
    };
    const slow = await client.sendEvent({ id: `evt_systemd_${suffix}_slow`, type: 'service.trigger.event', data: { slow: true } });
    await waitFor(() => receiver.byWebhookId(slow.deliveryId!).length === 1, { timeoutMs: 15_000, message: 'the slow attempt at the receiver' });
    const stopping = run('docker', ['exec', container, 'systemctl', 'stop', 'hookline']);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 503, { timeoutMs: 5_000, message: '/readyz 503 while draining' });
    release();
    expect((await stopping).status).toBe(0);
    expect({ result: await show('Result'), status: await show('ExecMainStatus'), state: await show('ActiveState') }).toEqual({ result: 'success', status: '0', state: 'inactive' });
    await exec('systemctl start hookline');
    await ready();
    const detail = await client.getDelivery(slow.deliveryId!);
    expect(detail.status).toBe('succeeded');
    expect(receiver.byWebhookId(slow.deliveryId!)).toHaveLength(1);
  });
});
