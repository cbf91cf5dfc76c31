import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import { createReceiveCommand } from '../../src/cli/receive.js';
import { runFuzz } from '../../src/fuzz/index.js';
import type { FuzzRequest } from '../../src/fuzz/index.js';
import { generateSecret, verifyWebhookSignature } from '../../src/sdk/index.js';
import { captureIo, receiverUrl } from '../helpers/cli.js';

/**
 * `hookline fuzz` against three receivers written here: a correct one, one that never checks the
 * signature, and one that re-serialises the JSON before verifying it.
 */

const LIMIT = 64 * 1024;
const SECRET = generateSecret();

type Verdict = (request: IncomingMessage, body: Buffer) => Promise<number>;

/** A node:http receiver on 127.0.0.1 whose status comes from `verdict`; bodies over LIMIT get 413. */
async function startTestReceiver(verdict: Verdict): Promise<{ url: string; requests: FuzzRequest[] }> {
  const requests: FuzzRequest[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= LIMIT) chunks.push(chunk);
    });
    request.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const headers = Object.fromEntries(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].flatMap((name) => (typeof request.headers[name] === 'string' ? [[name, request.headers[name]]] : [])));
        requests.push({ headers, body });
        response.writeHead(bytes > LIMIT ? 413 : await verdict(request, body)).end();
      })();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, requests };
}

const header = (request: IncomingMessage, name: string) => String(request.headers[name] ?? '');
const verifyRaw: Verdict = async (request, body) =>
  (await verifyWebhookSignature({ id: header(request, 'webhook-id'), timestamp: header(request, 'webhook-timestamp'), signature: header(request, 'webhook-signature'), body, secret: SECRET })) ? 204 : 400;
const skipSignature: Verdict = async () => 204;
const reserialise: Verdict = async (request, body) => {
  let text: string;
  try {
    text = JSON.stringify(JSON.parse(body.toString('utf8')));
  } catch {
    return 400;
  }
  return (await verifyWebhookSignature({ id: header(request, 'webhook-id'), timestamp: header(request, 'webhook-timestamp'), signature: header(request, 'webhook-signature'), body: text, secret: SECRET })) ? 204 : 400;
};

async function fuzz(url: string, ...extra: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  const code = await createFuzzCommand(io).run(['--target', url, '--secret', SECRET, '--seed', '4242', '--runs', '25', '--max-body', '64kb', ...extra]);
  return { code, out: io.out(), err: io.err() };
}

const row = (out: string, kind: string) => out.split('\n').find((line) => line.startsWith(`${kind} `)) ?? '';

describe('hookline fuzz', () => {
  it('passes a correct receiver: every kind of case answered right, exit 0', async () => {
    const receiver = await startTestReceiver(verifyRaw);
    const { code, out } = await fuzz(receiver.url);
    expect(code, out).toBe(0);
    for (const kind of ['valid', 'valid-second-candidate', 'tampered-body', 'wrong-secret', 'stale-timestamp', 'future-timestamp', 'reserialised-json', 'missing-header', 'garbage-header', 'unknown-version', 'bad-base64', 'oversized-body']) {
      expect(row(out, kind), out).toMatch(/ pass$/);
    }
    // Accepting a repeated webhook-id is reported, not failed: no answer can show whether it was processed twice.
    expect(row(out, 'replayed-webhook-id')).toMatch(/204→204×20 +WARN$/);
    expect(out).toContain('WARN replayed-webhook-id: 20 of 20 cases: the same webhook-id was accepted twice');
    expect(out).toContain('of 13 kinds of case 12 passed, 0 failed, 1 warned (seed 4242)');
    expect(receiver.requests.length).toBeGreaterThan(250);
  });

  it('fails a receiver that skips signature checks, naming each forged case, with the smallest delivery and the seed', async () => {
    const receiver = await startTestReceiver(skipSignature);
    const { code, out } = await fuzz(receiver.url);
    expect(code).toBe(1);
    expect(row(out, 'valid')).toMatch(/ pass$/);
    for (const kind of ['tampered-body', 'wrong-secret', 'stale-timestamp', 'future-timestamp', 'reserialised-json', 'missing-header', 'garbage-header', 'unknown-version', 'bad-base64']) {
      expect(row(out, kind), out).toMatch(/ FAIL$/);
      expect(out).toContain(`FAIL ${kind} (`);
      expect(out).toContain(`reproduce: hookline fuzz --target ${receiver.url} --secret "$WEBHOOK_SECRET" --seed 4242 --runs 25 --max-body 65536b --only ${kind}`);
    }
    expect(out).toMatch(/FAIL wrong-secret \(signed with another secret\): expected a non-2xx answer, got 204: the receiver accepted it/);
    // Shrunk: the smallest failing tampered delivery has an empty data object.
    const tampered = out.slice(out.indexOf('FAIL tampered-body'));
    expect(tampered).toMatch(/smallest failing delivery, after \d+ shrinks?/);
    expect(tampered).toContain('webhook-signature: v1,');
    expect(out).toContain('of 13 kinds of case');
  });

  it('fails a receiver that re-serialises JSON before verifying on valid deliveries', async () => {
    const receiver = await startTestReceiver(reserialise);
    const { code, out } = await fuzz(receiver.url);
    expect(code).toBe(1);
    expect(row(out, 'valid'), out).toMatch(/ FAIL$/);
    const failure = out.slice(out.indexOf('FAIL valid ('));
    expect(failure).toMatch(/^FAIL valid \(correctly signed, any JSON spelling, timestamp within ±10 s\): expected 2xx, got 400/);
    // The smallest failing body is a valid delivery whose bytes are not JSON.stringify's.
    const body = /body \(\d+ bytes\): (".*")/.exec(failure)![1]!;
    const text = JSON.parse(body) as string;
    expect(JSON.stringify(JSON.parse(text))).not.toBe(text);
    expect(text).toContain('"data"');
  });

  it('the seed reproduces the same run, request for request', async () => {
    const receiver = await startTestReceiver(verifyRaw);
    const now = () => 1_790_000_000_000;
    const run = async (seed: number) => {
      const sent: FuzzRequest[] = [];
      const answers: (number | null)[] = [];
      await runFuzz({
        secret: SECRET,
        seed,
        runs: 15,
        maxBodyBytes: LIMIT,
        now,
        send: async (request) => {
          sent.push(request);
          const response = await fetch(receiver.url, { method: 'POST', headers: request.headers, body: new Uint8Array(request.body) });
          answers.push(response.status);
          return { status: response.status, error: null };
        },
      });
      return { sent: sent.map((request) => ({ headers: request.headers, body: Buffer.from(request.body).toString('base64') })), answers };
    };
    const first = await run(7);
    const second = await run(7);
    expect(second.sent).toEqual(first.sent);
    expect(second.answers).toEqual(first.answers);
    expect((await run(8)).sent).not.toEqual(first.sent);
  });

  it('passes `hookline receive`, the receiver the quick start uses', async () => {
    const io = captureIo();
    const running = createReceiveCommand(io).run(['--port', '0', '--secret', SECRET, '--max-body', '64kb']);
    const url = await receiverUrl(io);
    const { code, out } = await fuzz(url, '--runs', '10', '--only', 'valid,valid-second-candidate,tampered-body,wrong-secret,stale-timestamp,future-timestamp,reserialised-json,missing-header,garbage-header,unknown-version,bad-base64,oversized-body');
    io.stop();
    expect(await running).toBe(0);
    expect(code, out).toBe(0);
    expect(out).toContain('of 12 kinds of case 12 passed, 0 failed, 0 warned');
    expect(io.out()).toMatch(/ 204 {2}msg_\S+ {2}service\.\S+ {2}verified {2}\{/);
    expect(io.out()).toMatch(/ 400 {2}msg_\S+ {2}\S+ {2}REJECTED \(signature does not match/);
    expect(io.out()).toMatch(/ 413 {2}.*REJECTED \(body of \d+ bytes is over the 65536-byte limit\)/);
  });

  it('stops, exit 1, when the receiver does not answer at all', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { code, out } = await fuzz(`http://127.0.0.1:${port}/webhooks`);
    expect(code).toBe(1);
    expect(row(out, 'valid')).toMatch(/no answer×1 +FAIL$/);
    expect(out).toMatch(/stopped in valid, the other kinds of case not run: 5 requests in a row got no answer \(last: .*\); is the receiver running at the target\? \(seed 4242\)/);
  });

  it('refuses bad options with what to do, exit 2', async () => {
    const io = captureIo();
    const code = await createFuzzCommand(io).run(['--target', 'ftp://x', '--runs', '0', '--only', 'valid,nope']);
    expect(code).toBe(2);
    expect(io.err()).toContain('hookline fuzz: --target: must be an absolute http:// or https:// URL');
    expect(io.err()).toContain('hookline fuzz: --secret: is required: --secret whsec_… (or WEBHOOK_SECRET)');
    expect(io.err()).toContain('hookline fuzz: --runs: must be the cases per kind, an integer from 1 to 10000 (got "0")');
    expect(io.err()).toContain('hookline fuzz: --only: unknown kind of case nope; one or more of: valid,');
    expect(io.err()).toContain('Run "hookline fuzz --help" for usage.');
    const help = captureIo();
    expect(await createFuzzCommand(help).run(['--help'])).toBe(0);
    expect(help.out()).toContain('Usage: hookline fuzz --target URL --secret whsec_…');
  });
});
