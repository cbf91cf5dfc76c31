import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { createFuzzCommand } from '../../src/cli/fuzz.js';
import { createReceiveCommand } from '../../src/cli/receive.js';
import { CASE_KINDS, fuzzReportSchema, runFuzz } from '../../src/fuzz/index.js';
import type { FuzzJsonReport, FuzzRequest } from '../../src/fuzz/index.js';
import { generateSecret, verifyWebhookSignature } from '../../src/sdk/index.js';
import { captureIo, receiverUrl } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { serve } from '../fixtures/planted-receivers.js';

/**
 * `hookline fuzz` against three receivers written here: a correct one, one that never checks the
 * signature, and one that re-serialises the JSON before verifying it; its output formats, and its
 * reproduction of one failing request. (Receivers with planted bugs: fuzz-planted-bugs.test.ts.)
 */

const LIMIT = 64 * 1024;
const SECRET = generateSecret();

type Verdict = (request: IncomingMessage, body: Buffer) => Promise<number>;

/** A node:http receiver on 127.0.0.1 whose status comes from `verdict`; bodies over `limit` get 413. */
async function startTestReceiver(verdict: Verdict, limit = LIMIT): Promise<{ url: string; requests: FuzzRequest[] }> {
  const requests: FuzzRequest[] = [];
  const url = await serve((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= limit) chunks.push(chunk);
    });
    request.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const headers = Object.fromEntries(['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].flatMap((name) => (typeof request.headers[name] === 'string' ? [[name, request.headers[name]]] : [])));
        requests.push({ headers, body });
        response.writeHead(bytes > limit ? 413 : await verdict(request, body)).end();
      })();
    });
  });
  return { url, requests };
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
  // Failing cases are written under TMPDIR: one removed after the test.
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  const io = captureIo({ TMPDIR: dir.path });
  const code = await createFuzzCommand(io).run(['--target', url, '--secret', SECRET, '--seed', '4242', '--runs', '25', '--max-body', '64kb', '--stall-wait', '200ms', ...extra]);
  return { code, out: io.out(), err: io.err() };
}

/** A correct receiver answering repeats as new deliveries (204): id-squatting cannot be told, and is not passed. */
const CORRECT_SUMMARY = `of ${CASE_KINDS.length} kinds of case ${CASE_KINDS.length - 1} passed, 0 failed (0 failure classes), 1 could not be decided`;

const row = (out: string, kind: string) => out.split('\n').find((line) => line.startsWith(`${kind} `)) ?? '';

describe('hookline fuzz', () => {
  it('passes a correct receiver: every kind of case answered right, exit 0', async () => {
    const receiver = await startTestReceiver(verifyRaw);
    const { code, out } = await fuzz(receiver.url);
    expect(code, out).toBe(0);
    for (const kind of CASE_KINDS.filter((kind) => kind !== 'id-squatting')) expect(row(out, kind), out).toMatch(/ pass$/);
    expect(row(out, 'id-squatting')).toMatch(/400→400→204→204→204×25 +could not be decided$/);
    expect(out).toContain('id-squatting could not be decided: the receiver answers a fresh delivery and a repeat alike (204)');
    // A repeated webhook-id answered 2xx is right: Hookline's retries repeat it.
    expect(row(out, 'repeated-webhook-id')).toMatch(/204→204×25 +pass$/);
    expect(out).toContain(`${CORRECT_SUMMARY} (seed 4242)`);
    expect(out).toMatch(/timestamp window +past: accepted up to (299|300|301) s; future: accepted up to (299|300|301) s/);
    expect(out).toMatch(/largest body +about 6\d{4} bytes/);
    expect(receiver.requests.length).toBeGreaterThan(300);
  });

  it('fails a receiver that skips signature checks, naming each forged case, with the smallest delivery and the seed', async () => {
    const receiver = await startTestReceiver(skipSignature);
    const { code, out } = await fuzz(receiver.url);
    expect(code).toBe(1);
    expect(row(out, 'valid')).toMatch(/ pass$/);
    for (const kind of ['tampered-body', 'wrong-secret', 'stale-timestamp', 'future-timestamp', 'reserialised-json', 'missing-header', 'garbage-header', 'unknown-version', 'bad-base64']) {
      // Every run of a failing kind ran: one bug does not hide the others.
      expect(row(out, kind), out).toMatch(/ FAIL \((\d+) of \1\)$/);
      expect(out).toContain(`FAIL ${kind} (`);
    }
    expect(out).toMatch(/FAIL wrong-secret \(signed with another secret\): expected a non-2xx answer, got 204: the receiver accepted it; 25 of 25 runs/);
    const tampered = out.slice(out.indexOf('FAIL tampered-body'));
    expect(tampered).toMatch(/smallest failing delivery, after \d+ shrinks?/);
    expect(tampered).toContain('webhook-signature: v1,');
    expect(tampered).toMatch(/\n {2}reproduce \(1 request, as the run sent it, with a new webhook-id and timestamp; the secret from --secret or WEBHOOK_SECRET\): hookline fuzz --replay-case '[^']+tampered-body-1\.case\.json'\n/);
    expect(tampered).toMatch(/or with curl \(the same request, signed at the run's time: within the receiver's tolerance\): curl -sS -o \/dev\/null -w '%\{http_code\}\\n' -X POST '[^']+' -H 'content-type: application\/json' -H 'user-agent: Hookline\/[^']+' -H 'webhook-id: msg_/);
    expect(out.split('\n').every((line) => line.length < 1_000)).toBe(true);
  });

  it('fails a receiver that verifies re-serialised JSON on reserialised-json only: every case expecting a 2xx is spelled as Hookline spells it', async () => {
    const receiver = await startTestReceiver(reserialise);
    const { code, out } = await fuzz(receiver.url, '--skip-measure');
    expect(code).toBe(1);
    // Hookline sends JSON.stringify's bytes, which re-serialise to themselves: real traffic passes this receiver.
    for (const kind of ['valid', 'valid-utf8', 'valid-chunked', 'valid-rotation', 'repeated-webhook-id', 'concurrent-duplicates']) expect(row(out, kind), out).toMatch(/ pass$/);
    expect(row(out, 'id-squatting'), out).toMatch(/ could not be decided$/);
    expect(row(out, 'reserialised-json'), out).toMatch(/ FAIL \((\d+) of \1\)$/);
    expect(out).toContain(`of ${CASE_KINDS.length} kinds of case ${CASE_KINDS.length - 2} passed, 1 failed (1 failure class), 1 could not be decided`);
    expect(out).toContain('diagnosis: JSON re-spelled after signing is accepted');
  });

  it('sends what real deliveries send: Hookline\'s user-agent and every --header, so a receiver requiring its token passes', async () => {
    // A common setup: the webhook's custom headers carry a token the receiver checks before anything else.
    const tokenChecked: Verdict = async (request, body) => (header(request, 'x-receiver-token') === 's3cret' && header(request, 'user-agent').startsWith('Hookline/') ? verifyRaw(request, body) : 401);
    const receiver = await startTestReceiver(tokenChecked);
    const { code, out } = await fuzz(receiver.url, '--header', 'X-Receiver-Token: s3cret', '--header', 'X-Team: payments', '--runs', '10');
    expect(code, out).toBe(0);
    expect(out).toContain(CORRECT_SUMMARY);
    expect(out).toMatch(/timestamp window +past: accepted up to (299|300|301) s/);
    const bad = captureIo();
    expect(await createFuzzCommand(bad).run(['--target', receiver.url, '--secret', SECRET, '--header', 'webhook-id: x'])).toBe(2);
    expect(bad.err()).toContain('hookline fuzz: --header: webhook-id: Hookline sets webhook-id itself');
  });

  it("sends the --target URL's credentials as basic auth, as deliveries do, so a receiver requiring them passes; status lines mask the password", async () => {
    const expected = `Basic ${Buffer.from('bob:p@ss').toString('base64')}`;
    const basicChecked: Verdict = async (request, body) => (header(request, 'authorization') === expected && !request.url!.includes('@') ? verifyRaw(request, body) : 401);
    const receiver = await startTestReceiver(basicChecked);
    const { code, out } = await fuzz(receiver.url.replace('http://', 'http://bob:p%40ss@'), '--runs', '10');
    expect(code, out).toBe(0);
    expect(out).toContain(CORRECT_SUMMARY);
    expect(out).toContain(`fuzzing ${receiver.url.replace('http://', 'http://bob:***@')} `);
  });

  it('waits for an answer as long as real deliveries do: HOOKLINE_DELIVERY_TIMEOUT, read as serve reads it', async () => {
    // 400 ms per answer: within the default, past a HOOKLINE_DELIVERY_TIMEOUT of 200ms.
    const slow: Verdict = async (request, body) => new Promise((resolve) => setTimeout(() => resolve(verifyRaw(request, body)), 400));
    const receiver = await startTestReceiver(slow);
    const run = async (env: Record<string, string>) => {
      const io = captureIo(env);
      const code = await createFuzzCommand(io).run(['--target', receiver.url, '--secret', SECRET, '--seed', '4242', '--runs', '2', '--only', 'valid', '--skip-measure']);
      return { code, out: io.out(), err: io.err() };
    };
    const configured = await run({ HOOKLINE_DELIVERY_TIMEOUT: '200ms' });
    expect(configured.code).toBe(1);
    expect(configured.err).toContain('did not answer a valid delivery (no answer within 200 ms)');
    expect((await run({})).code).toBe(0);
    const bad = await run({ HOOKLINE_DELIVERY_TIMEOUT: 'soon' });
    expect(bad.code).toBe(2);
    expect(bad.err).toBe('hookline fuzz: HOOKLINE_DELIVERY_TIMEOUT must be a duration from 1ms to 24d (Node\'s longest timer), such as 15s, got "soon"; fix it, or pass --timeout\n');
  });

  it('sends valid bodies no larger than Hookline delivers (HOOKLINE_MAX_BODY plus the envelope), and blames a 413 on the body limit', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const chunked = async (receiver: { url: string }, env: Record<string, string> = {}) => {
      const io = captureIo({ ...env, TMPDIR: dir.path });
      const code = await createFuzzCommand(io).run(['--target', receiver.url, '--secret', SECRET, '--seed', '4242', '--runs', '40', '--only', 'valid-chunked', '--skip-measure']);
      return { code, out: io.out() };
    };
    // 512 KiB takes every delivery of a default Hookline (262,144-byte events), though not --max-body's default 1 MiB.
    const roomy = await chunked(await startTestReceiver(verifyRaw, 512 * 1024));
    expect(roomy.code, roomy.out).toBe(0);
    // HOOKLINE_MAX_BODY=64kb: its deliveries fit a 100 KiB limit.
    const configured = await chunked(await startTestReceiver(verifyRaw, 100 * 1024), { HOOKLINE_MAX_BODY: '64kb' });
    expect(configured.code, configured.out).toBe(0);
    // 200 KiB is too small for a default Hookline: the diagnosis names the limit, not the chunk decoding.
    const small = await chunked(await startTestReceiver(verifyRaw, 200 * 1024));
    expect(small.code).toBe(1);
    expect(row(small.out, 'valid-chunked'), small.out).toMatch(/ 413×\d+ .*FAIL/);
    expect(small.out).toMatch(/diagnosis: a body of \d+ bytes answered 413: your body limit is below what Hookline can send \(bodies up to 263168 bytes: HOOKLINE_MAX_BODY plus the envelope\)/);
    expect(small.out).not.toContain('each chunk on its own');
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
    const { code, out } = await fuzz(url, '--runs', '10');
    io.stop();
    expect(await running).toBe(0);
    expect(code, out).toBe(0);
    expect(out).toContain(CORRECT_SUMMARY);
    expect(io.out()).toMatch(/ 204 {2}msg_\S+ {2}service\.\S+ {2}verified {2}\{/);
    expect(io.out()).toMatch(/ 400 {2}msg_\S+ {2}\S+ {2}REJECTED \(signature does not match/);
    expect(io.out()).toMatch(/ 413 {2}.*REJECTED \(body of \d+ bytes is over the 65536-byte limit\)/);
  });

  it('says first, in one line, that the target refuses connections: exit 1, no case run, nothing shrunk', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { code, out, err } = await fuzz(`http://127.0.0.1:${port}/webhooks`);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe(`hookline fuzz: cannot connect to http://127.0.0.1:${port}/webhooks (connection refused: nothing listens on 127.0.0.1:${port}); start the receiver, or check --target\n`);
  });

  it('says at once, exit 1, nothing shrunk, when the receiver takes connections but never answers', async () => {
    const server = createNetServer((socket) => socket.destroy());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const { code, out, err } = await fuzz(`http://127.0.0.1:${port}/webhooks`);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe(`hookline fuzz: http://127.0.0.1:${port}/webhooks took the connection but did not answer a valid delivery (connection closed by the receiver); is it a webhook receiver, and running?\n`);
  });

  it('--format json is one report on stdout that validates against docs/fuzz-report.schema.json; --junit and --save-failures write their files', async () => {
    const schemaFile = new URL('../../docs/fuzz-report.schema.json', import.meta.url);
    const generated = `${JSON.stringify(z.toJSONSchema(fuzzReportSchema), null, 2)}\n`;
    if (process.env.HOOKLINE_UPDATE_SCHEMA === '1') writeFileSync(schemaFile, generated);
    expect(readFileSync(schemaFile, 'utf8'), 'docs/fuzz-report.schema.json is stale: run this test with HOOKLINE_UPDATE_SCHEMA=1').toBe(generated);

    const receiver = await startTestReceiver(skipSignature);
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const junit = `${dir.path}/fuzz.xml`;
    const { code, out } = await fuzz(receiver.url, '--runs', '10', '--only', 'valid,wrong-secret,stale-timestamp', '--format', 'json', '--junit', junit, '--save-failures', `${dir.path}/failures`);
    expect(code).toBe(1);
    expect(out.trim().split('\n')).toHaveLength(1);
    const report = JSON.parse(out) as FuzzJsonReport;
    const validate = new Ajv2020({ strict: false }).compile(JSON.parse(generated) as object);
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.cases.map((entry) => [entry.kind, entry.verdict, entry.runs])).toEqual([['valid', 'pass', 10], ['wrong-secret', 'fail', 10], ['stale-timestamp', 'fail', 10]]);

    const xml = readFileSync(junit, 'utf8');
    // It parses as XML (what a CI system reads first), one testsuite holding a testcase per case kind.
    expect(XMLValidator.validate(xml)).toBe(true);
    const parsed = new XMLParser({ ignoreAttributes: false, isArray: (name) => name === 'testsuite' || name === 'testcase' }).parse(xml) as { testsuites: { testsuite: Array<{ testcase: Array<{ '@_name': string; failure?: unknown }> }> } };
    const testcases = parsed.testsuites.testsuite.flatMap((suite) => suite.testcase);
    expect(testcases.filter((testcase) => testcase.failure !== undefined).map((testcase) => testcase['@_name']).sort()).toEqual(['stale-timestamp', 'wrong-secret']);
    expect(xml).toContain('<testsuites name="hookline fuzz" tests="4" failures="2">');
    expect(xml).toMatch(/<testcase classname="hookline.fuzz" name="wrong-secret">\s*<failure message="expected a non-2xx answer, got 204: the receiver accepted it; 10 of 10 runs"/);

    expect(xml).toMatch(/replay: hookline fuzz --replay-case &#39;[^&]+wrong-secret-1\.case\.json&#39;\ncurl: curl -sS/);
    // --format junit writes the same XML on stdout (a second run: new ids and timestamps).
    const asFormat = await fuzz(receiver.url, '--runs', '10', '--only', 'valid,wrong-secret,stale-timestamp', '--format', 'junit');
    const unstamped = (text: string) => text.replace(/(webhook-id: |webhook-timestamp: |v1,|replay-case &#39;)[^&]+/g, '$1…').replace(/(--data-binary )[^<]+/g, '$1…').replace(/<system-out>[^<]*<\/system-out>/, '');
    expect(unstamped(asFormat.out)).toBe(unstamped(xml));

    // The saved curl command sends exactly the one failing request, byte for byte.
    const failure = report.cases.find((entry) => entry.kind === 'wrong-secret')!.failures[0]!;
    expect(existsSync(`${dir.path}/failures/wrong-secret-1.json`)).toBe(true);
    const before = receiver.requests.length;
    // Not execFileSync: the receiver runs in this process and must answer meanwhile.
    const status = (await promisify(execFile)('sh', ['-c', failure.curl[0]!], { encoding: 'utf8' })).stdout.trim();
    expect(status).toBe('204');
    expect(receiver.requests.length).toBe(before + 1);
    const sent = receiver.requests[before]!;
    expect(Buffer.from(sent.body).toString('base64')).toBe(failure.requests[0]!.bodyBase64);
    expect(sent.headers).toEqual(failure.requests[0]!.headers);
  });

  it('the same seed makes the same cases, with --only or without', async () => {
    const receiver = await startTestReceiver(verifyRaw);
    const bodies = async (...extra: string[]) => {
      const before = receiver.requests.length;
      await fuzz(receiver.url, '--runs', '5', '--skip-measure', ...extra);
      return receiver.requests.slice(before).map((request) => Buffer.from(request.body).toString('base64'));
    };
    const all = await bodies();
    expect(await bodies()).toEqual(all);
    const only = (await bodies('--only', 'valid-utf8')).slice(1); // after the first request, a probe
    expect(only).toHaveLength(5);
    expect(all).toEqual(expect.arrayContaining(only));
  });

  it('refuses bad options with what to do, exit 2', async () => {
    const io = captureIo();
    const code = await createFuzzCommand(io).run(['--target', 'ftp://x', '--runs', '0', '--only', 'valid,nope', '--expect-duplicate', '409', '--format', 'xml']);
    expect(code).toBe(2);
    expect(io.err()).toContain('hookline fuzz: --target: must be an absolute http:// or https:// URL');
    expect(io.err()).toContain('hookline fuzz: no secret: pass --secret whsec_… or set WEBHOOK_SECRET');
    expect(io.err()).toContain('hookline fuzz: --runs: must be the cases per kind, an integer from 1 to 10000 (got "0")');
    expect(io.err()).toContain('hookline fuzz: --only: unknown kind of case nope; one or more of: valid,');
    expect(io.err()).toContain('hookline fuzz: --expect-duplicate: must be 2xx or any');
    expect(io.err()).toContain('hookline fuzz: --format: must be text, json or junit');
    expect(io.err()).toContain('Run "hookline fuzz --help" for usage.');
    const strict = captureIo();
    expect(await createFuzzCommand(strict).run(['--target', 'http://127.0.0.1:9/', '--strict-replay'])).toBe(2);
    expect(strict.err()).toBe('hookline fuzz: --strict-replay is gone: a repeated webhook-id must now get a 2xx, as at-least-once delivery needs; --expect-duplicate any accepts any answer\nRun "hookline fuzz --help" for usage.\n');
    const help = captureIo();
    expect(await createFuzzCommand(help).run(['--help'])).toBe(0);
    expect(help.out()).toContain('Usage: hookline fuzz --target URL --secret whsec_…');
  });
});
