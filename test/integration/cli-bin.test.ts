import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineGraph, renderDot, renderSvg } from '../../src/diagram/index.js';
import { generateSecret, signWebhook } from '../../src/sdk/index.js';
import { startTestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The commands as a user runs them: `node dist/cli/main.js …`, the file `npx hookline` runs. The
 * package is compiled here into a private directory inside the repository (so that node_modules
 * resolves), then run as child processes.
 */

const repo = new URL('../../', import.meta.url).pathname;
const outDir = join(repo, 'node_modules', '.cache', `hookline-cli-bin-${process.pid}`);
const main = join(outDir, 'cli', 'main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function hookline(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(() => {
  mkdirSync(outDir, { recursive: true });
  // tsc emits even when some other file fails to type-check; what matters here is the CLI's output.
  spawnSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repo, 'tsconfig.build.json'), '--outDir', outDir, '--declaration', 'false', '--sourceMap', 'false'], { cwd: repo, stdio: 'ignore' });
  if (!existsSync(main)) throw new Error(`the build did not produce ${main}`);
}, 180_000);

afterAll(() => rmSync(outDir, { recursive: true, force: true }));

describe('the hookline command', () => {
  it('lists every command, and each one has --help', async () => {
    const overview = await hookline(['--help']);
    expect(overview.code).toBe(0);
    for (const name of ['serve', 'keys', 'receive', 'fuzz', 'replay', 'inspect', 'diagram']) {
      expect(overview.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      const help = await hookline([name, '--help']);
      expect(help.code, name).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: hookline ${name}`));
    }
  });

  it('diagram prints DOT and writes SVG generated from the machines', async () => {
    const dot = await hookline(['diagram', '--machine', 'webhook', '--format', 'dot']);
    expect(dot.code).toBe(0);
    expect(dot.stdout).toBe(renderDot(machineGraph('webhook')));
    const dir = makeTempDir();
    try {
      const file = join(dir.path, 'delivery.svg');
      const svg = await hookline(['diagram', '--format', 'svg', '--output', file]);
      expect(svg.code).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(renderSvg(machineGraph('delivery')));
    } finally {
      dir.remove();
    }
    const bad = await hookline(['diagram', '--machine', 'order']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('hookline diagram: --machine: must be one of delivery, webhook');
  });

  it('fuzz without a target says what to do and exits 2', async () => {
    const run = await hookline(['fuzz']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('hookline fuzz: --target: is required');
    expect(run.stderr).toContain('Run "hookline fuzz --help" for usage.');
  });

  it('receive verifies and prints, and Ctrl-C stops it with a count', async () => {
    const secret = generateSecret();
    const child = spawn(process.execPath, [main, 'receive', '--port', '0'], { env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRET: secret }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const url = await waitFor(() => /listening on (http:\/\/\S+\/)/.exec(stderr)?.[1], { timeoutMs: 10_000, message: 'the receiver to listen' });
      const timestamp = Math.floor(Date.now() / 1000);
      const body = '{"version":"v1","id":"evt_bin","type":"service.trigger.event","metadata":{},"data":{},"timestamp":"2026-01-01T00:00:00.000+00:00"}';
      const answer = await fetch(`${url}webhooks`, { method: 'POST', headers: { 'webhook-id': 'msg_bin', 'webhook-timestamp': String(timestamp), 'webhook-signature': await signWebhook({ id: 'msg_bin', timestamp, body, secrets: secret }) }, body });
      expect(answer.status).toBe(204);
      await waitFor(() => stdout.includes('msg_bin'), { message: 'the delivery to be printed' });
      expect(stdout).toMatch(/ 204 {2}msg_bin {2}service\.trigger\.event {2}verified {2}\{"version":"v1","id":"evt_bin"/);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    expect(stderr).toContain('stopped after 1 request: 1 verified, 0 rejected');
  });

  it('replay reads the events of a running node from another process', async () => {
    const node = await startTestHookline();
    await node.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/held', status: 'paused', eventTypes: ['service.trigger.event'] });
    const first = await node.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    const second = await node.client.sendEvent({ type: 'service.trigger.disabled', data: { n: 2 } });
    const staging = await startReceiver();
    staging.secret = generateSecret();
    const run = await hookline(['replay', '--from', '10m', '--target', staging.url, '--secret', staging.secret, '--rate', '100'], { HOOKLINE_DATA_DIR: node.dataDir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('replayed 2 of 2 events');
    expect(staging.received.map((delivery) => [delivery.envelope.id, delivery.verified])).toEqual([[first.id, true], [second.id, true]]);
    // The node goes on writing to the same LMDB environment afterwards.
    expect((await node.client.sendEvent({ type: 'service.trigger.event', data: { n: 3 } })).deliveryId).toMatch(/^dlv_/);
  });
});
