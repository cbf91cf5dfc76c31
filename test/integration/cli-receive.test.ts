import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createReceiveCommand } from '../../src/cli/receive.js';
import { rejectionReason } from '../../src/receive/verifying-receiver.js';
import { generateSecret, signWebhook } from '../../src/sdk/index.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo, receiverUrl } from '../helpers/cli.js';
import { ALL_TYPES, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { waitFor } from '../helpers/wait-for.js';

/** `hookline receive` verifies what a running Hookline delivers, and refuses what it did not sign. */

/** The file `npx hookline` runs. */
const ENTRY = new URL('../../dist/cli/main.js', import.meta.url).pathname;

describe('hookline receive', () => {
  it('verifies real deliveries from a running Hookline and prints id, type, verdict and body', async () => {
    const hookline = await startTestHookline();
    // The secret is made at the first PUT; the receiver needs it before it starts.
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/placeholder', status: 'paused', eventTypes: ALL_TYPES });
    const { secret } = await hookline.client.getSecret();
    // As the SDK's verifier takes it: without whsec_ and without base64 padding as well.
    const io = captureIo({ WEBHOOK_SECRET: secret.slice('whsec_'.length).replace(/=+$/, '') });
    const running = createReceiveCommand(io).run(['--port', '0']);
    const url = await receiverUrl(io);
    await hookline.client.configureWebhook({ callbackUrl: `${url}webhooks`, status: 'active', eventTypes: ALL_TYPES });

    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { hello: 'world' }, metadata: { trigger_id: 'trg_1' } });
    const other = await hookline.client.sendEvent({ type: 'service.connected_account.expired', data: { account: 'acc_1' } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    await waitForDeliveryStatus(hookline.client, other.deliveryId!, 'succeeded');
    await waitFor(() => io.out().split('\n').filter(Boolean).length >= 2, { message: 'two printed deliveries' });

    const lines = io.out().trim().split('\n');
    const first = lines.find((line) => line.includes(sent.deliveryId!))!;
    expect(first).toMatch(new RegExp(`^\\d{2}:\\d{2}:\\d{2}\\.\\d{3}  204  ${sent.deliveryId}  service\\.trigger\\.event  verified  \\{"version":"v1","id":"${sent.id}",`));
    expect(first).toContain('"data":{"hello":"world"}');
    expect(lines.find((line) => line.includes(other.deliveryId!))).toContain('  service.connected_account.expired  verified  ');

    // Not signed by Hookline: refused with 400 and the reason.
    const timestamp = Math.floor(Date.now() / 1000);
    const forged = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(timestamp), 'webhook-signature': await signWebhook({ id: 'msg_forged', timestamp, body: '{}', secrets: generateSecret() }) },
      body: '{"type":"service.trigger.event"}',
    });
    expect(forged.status).toBe(400);
    const stale = await fetch(`${url}x`, {
      method: 'POST',
      headers: { 'webhook-id': 'msg_old', 'webhook-timestamp': String(timestamp - 3600), 'webhook-signature': await signWebhook({ id: 'msg_old', timestamp: timestamp - 3600, body: '{}', secrets: secret }) },
      body: '{}',
    });
    expect(stale.status).toBe(400);
    // The readiness probe is answered and not counted (the 5 requests below); any other GET is a refused request, printed.
    const probe = await fetch(`${url}healthz`);
    expect([probe.status, await probe.text()]).toEqual([200, 'ok\n']);
    expect((await fetch(url)).status).toBe(405);
    await waitFor(() => io.out().includes('405'), { message: 'the GET to be printed' });
    expect(io.out()).toContain('  400  msg_forged  service.trigger.event  REJECTED (signature does not match (wrong secret, or the body or headers changed))  {"type":"service.trigger.event"}');
    expect(io.out()).toMatch(/ 400 {2}msg_old {2}- {2}REJECTED \(webhook-timestamp is 360[01] s in the past \(tolerance 300 s\)\)/);

    io.stop();
    expect(await running).toBe(0);
    expect(io.err()).toContain('hookline receive: stopped after 5 requests: 2 verified, 3 rejected');
    await expect(fetch(url)).rejects.toThrow();
  });

  it('prints one JSON object per request with --json', async () => {
    const secret = generateSecret();
    const io = captureIo();
    const running = createReceiveCommand(io).run(['--port', '0', '--secret', secret, '--json']);
    const url = await receiverUrl(io);
    const timestamp = Math.floor(Date.now() / 1000);
    const body = '{"version":"v1","id":"evt_1","type":"service.trigger.disabled","metadata":{},"data":{"n":1},"timestamp":"2026-01-01T00:00:00.000+00:00"}';
    const answer = await fetch(url, { method: 'POST', headers: { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': await signWebhook({ id: 'msg_1', timestamp, body, secrets: secret }) }, body });
    expect(answer.status).toBe(204);
    await waitFor(() => io.out().includes('\n'), { message: 'a printed line' });
    io.stop();
    await running;
    expect(JSON.parse(io.out())).toMatchObject({ webhookId: 'msg_1', type: 'service.trigger.disabled', verdict: 'verified', status: 204, reason: null, body: JSON.parse(body) });
  });

  it('has --help, and refuses bad flags with what to do (exit 2)', async () => {
    const help = captureIo();
    expect(await createReceiveCommand(help).run(['--help'])).toBe(0);
    expect(help.out()).toContain('Usage: hookline receive --port 9000 --secret whsec_…');
    const io = captureIo();
    expect(await createReceiveCommand(io).run(['--port', '70000', '--secret', 'nope', '--bogus'])).toBe(2);
    expect(io.err()).toMatch(/hookline receive: Unknown option '--bogus'/);
    const bad = captureIo();
    expect(await createReceiveCommand(bad).run(['--port', '70000', '--secret', 'no*pe'])).toBe(2);
    expect(bad.err()).toContain('hookline receive: --port: must be a port, an integer from 0 to 65535 (got "70000")');
    expect(bad.err()).toContain('hookline receive: --secret is not a secret: it must be base64, "whsec_" before it or not; the endpoint\'s secret is shown by curl -s http://127.0.0.1:8080/v1/webhook/secret');
  });

  it('without a secret, or with an empty one, says in one line which setting and how to get it (exit 2, no stack trace)', async () => {
    ensureBuilt();
    const curl = `the endpoint's secret is shown by curl -s http://127.0.0.1:8080/v1/webhook/secret -H "authorization: Bearer $HOOKLINE_API_KEY"`;
    const cases: Array<[string[], Record<string, string>, string]> = [
      [[], {}, 'no secret: pass --secret whsec_… or set WEBHOOK_SECRET'],
      [[], { WEBHOOK_SECRET: '' }, 'WEBHOOK_SECRET is empty: it must be the "whsec_…" secret'],
      [['--secret', ''], { WEBHOOK_SECRET: generateSecret() }, '--secret is empty: it must be the "whsec_…" secret'],
    ];
    for (const [args, env, problem] of cases) {
      const run = spawnSync(process.execPath, [ENTRY, 'receive', '--port', '0', ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 20_000 });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`hookline receive: ${problem}; ${curl}\n`);
    }
  }, 180_000); // a first build of dist/ takes a while on a busy machine

  it("names the API this environment points at in the secret's curl: HOOKLINE_URL, else HOOKLINE_HOST and HOOKLINE_PORT", async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ HOOKLINE_URL: 'https://hookline.example.com/', HOOKLINE_PORT: '9090' }, 'https://hookline.example.com/v1/webhook/secret'],
      [{ HOOKLINE_HOST: '10.1.2.3', HOOKLINE_PORT: '9090' }, 'http://10.1.2.3:9090/v1/webhook/secret'],
      [{ HOOKLINE_HOST: '0.0.0.0', HOOKLINE_PORT: '9091' }, 'http://127.0.0.1:9091/v1/webhook/secret'],
      [{ HOOKLINE_HOST: '::1' }, 'http://[::1]:8080/v1/webhook/secret'],
    ];
    for (const [env, secretUrl] of cases) {
      const io = captureIo(env);
      expect(await createReceiveCommand(io).run(['--port', '0'])).toBe(2);
      expect(io.err()).toBe(`hookline receive: no secret: pass --secret whsec_… or set WEBHOOK_SECRET; the endpoint's secret is shown by curl -s ${secretUrl} -H "authorization: Bearer $HOOKLINE_API_KEY"\n`);
    }
  });

  it("gives the timestamp as the reason whenever the verifier refused it for its timestamp, near the tolerance's edge too", () => {
    const signature = 'v1,AAAA';
    // The clock at .8 of a second: 300.2 s rounded to 300 passed the reason's check, though 301 whole seconds were refused.
    const nowMs = 1_700_000_000_800;
    expect(rejectionReason({ id: 'msg_1', timestamp: String(1_700_000_301), signature }, 300, nowMs)).toBe('webhook-timestamp is 301 s in the future (tolerance 300 s)');
    expect(rejectionReason({ id: 'msg_1', timestamp: String(1_699_999_699), signature }, 300, nowMs)).toBe('webhook-timestamp is 301 s in the past (tolerance 300 s)');
    expect(rejectionReason({ id: 'msg_1', timestamp: String(1_699_999_700), signature }, 300, nowMs)).toMatch(/^signature does not match/);
  });
});
