import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import type { FuzzJsonReport } from '../../src/fuzz/index.js';
import { generateSecret, verifyWebhookSignature } from '../../src/sdk/index.js';
import { captureIo } from '../helpers/cli.js';
import { API_KEY, startTestHookline } from '../helpers/hookline.js';

/**
 * `hookline fuzz --corpus DIR|URL`: the bodies are the events a Hookline node stored, read from its
 * data directory while it runs (read-only) or asked of its API with the project's key, so a receiver
 * is fuzzed with its team's own payloads.
 */

const SECRET = generateSecret();

describe('hookline fuzz --corpus', () => {
  it.each(['data dir', 'url'] as const)('sends the stored envelopes byte for byte as valid deliveries, and re-spells the same events (corpus from the %s)', async (source) => {
    const hookline = await startTestHookline();
    const stored: Buffer[] = [];
    for (const text of ['grüße aus Köln', '東京の天気', 'launch 🚀\u2028done']) {
      const { id } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { text } });
      stored.push(Buffer.from(hookline.node.engine.store.getEvent('default', id)!.envelope));
    }
    const bodies: Buffer[] = [];
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        bodies.push(body);
        const header = (name: string) => String(request.headers[name] ?? '');
        void verifyWebhookSignature({ id: header('webhook-id'), timestamp: header('webhook-timestamp'), signature: header('webhook-signature'), body, secret: SECRET }).then((ok) => response.writeHead(ok ? 204 : 400).end());
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;

    const io = captureIo();
    const code = await createFuzzCommand(io).run(['--target', url, '--secret', SECRET, '--seed', '5', '--runs', '20', '--only', 'valid,reserialised-json', '--skip-measure', '--format', 'json', ...(source === 'url' ? ['--corpus', hookline.url, '--api-key', API_KEY] : ['--corpus', hookline.dataDir])]);
    const report = JSON.parse(io.out()) as FuzzJsonReport;
    expect(code, io.out()).toBe(0);
    expect(report.cases.every((entry) => entry.verdict === 'pass')).toBe(true);
    // Every valid case went out exactly as stored: as Hookline sent it, in no other spelling.
    const validBodies = bodies.slice(1, 21); // after the probe, the 20 runs of `valid`
    expect(validBodies.filter((body) => !stored.some((envelope) => body.equals(envelope)))).toEqual([]);
    for (const envelope of stored) expect(validBodies.some((body) => body.equals(envelope))).toBe(true);
    // And nothing generated: every body is one of the stored events, re-spelled for reserialised-json.
    const storedIds = stored.map((envelope) => (JSON.parse(envelope.toString('utf8')) as { id: string }).id);
    const sentIds = bodies.slice(1).flatMap((body) => { try { return [(JSON.parse(body.toString('utf8')) as { id: string }).id]; } catch { return []; } });
    expect(sentIds.length).toBeGreaterThan(30);
    expect(sentIds.filter((id) => !storedIds.includes(id))).toEqual([]);
  });

  it('says in one line when the directory or the project holds no events', async () => {
    const hookline = await startTestHookline();
    const io = captureIo();
    const server = createServer((_request, response) => response.writeHead(204).end());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    expect(await createFuzzCommand(io).run(['--target', url, '--secret', SECRET, '--corpus', hookline.dataDir, '--project', 'nosuch'])).toBe(1);
    expect(io.err()).toBe(`hookline fuzz: --corpus: project "nosuch" does not exist in ${hookline.dataDir}; check --project\n`);
    const empty = captureIo();
    expect(await createFuzzCommand(empty).run(['--target', url, '--secret', SECRET, '--corpus', hookline.dataDir])).toBe(1);
    expect(empty.err()).toBe(`hookline fuzz: --corpus: project "default" has no stored events in ${hookline.dataDir}: nothing to build a corpus from\n`);
  });

  it('says in one line, exit 2, when the URL cannot be reached or refuses the key, and 1 when the project has no events', async () => {
    const hookline = await startTestHookline();
    const server = createServer((_request, response) => response.writeHead(204).end());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const io = captureIo(env);
      return { code: await createFuzzCommand(io).run(['--target', url, '--secret', SECRET, ...args]), err: io.err() };
    };

    expect(await run(['--corpus', hookline.url, '--api-key', 'wrong'])).toEqual({ code: 2, err: expect.stringMatching(new RegExp(`^hookline fuzz: --corpus: ${hookline.url} answered 401 unauthorized: .*; check --api-key \\(or HOOKLINE_API_KEY\\)\n$`)) });
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const nobody = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await run(['--corpus', nobody], { HOOKLINE_API_KEY: API_KEY })).toEqual({ code: 2, err: expect.stringMatching(new RegExp(`^hookline fuzz: --corpus: cannot reach Hookline at ${nobody} \\(.*ECONNREFUSED.*\\); is it running\\?\n$`)) });
    expect(await run(['--corpus', hookline.url])).toEqual({ code: 2, err: expect.stringContaining("--api-key: is required with --corpus URL: pass the project's key with --api-key or set HOOKLINE_API_KEY") });
    expect(await run(['--corpus', hookline.url, '--api-key', API_KEY, '--project', 'default'])).toEqual({ code: 2, err: expect.stringContaining('--project is for --corpus DIR: with --corpus URL the API key names the project') });
    expect(await run(['--corpus', hookline.url], { HOOKLINE_API_KEY: API_KEY })).toEqual({ code: 1, err: `hookline fuzz: --corpus: ${hookline.url}: the project of this key has no stored events: nothing to build a corpus from\n` });
  });
});
