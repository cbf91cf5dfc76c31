import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpSender, parseRetryAfter } from '../../src/transport/http-sender.js';

interface Receiver {
  readonly url: string;
  readonly requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  /** TCP connections accepted, to observe keep-alive reuse. */
  connections: number;
  /** Sockets closed on the server side, to observe that a huge answer was cut short. */
  closedSockets: number;
}

const servers: Server[] = [];
const senders: HttpSender[] = [];
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await Promise.all(senders.splice(0).map((sender) => sender.close()));
  await Promise.all(
    servers.splice(0).map(async (server) => {
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

/** A real receiver on 127.0.0.1; the handler runs once the request body has arrived. */
async function startReceiver(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Receiver> {
  const server = createServer();
  servers.push(server);
  const receiver: Receiver = { url: '', requests: [], connections: 0, closedSockets: 0 };
  server.on('connection', (socket) => {
    receiver.connections += 1;
    socket.on('close', () => (receiver.closedSockets += 1));
  });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      handler(req, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/hooks?tenant=t1` });
}

function newSender(options: Partial<ConstructorParameters<typeof HttpSender>[0]> = {}): HttpSender {
  const sender = new HttpSender({ timeoutMs: 5_000, ...options });
  senders.push(sender);
  return sender;
}

const body = JSON.stringify({ version: 'v1', id: 'evt_1', type: 'service.trigger.event', data: {} });

describe('HttpSender against real receivers', () => {
  it('records a 204 as success and sends the signed bytes as JSON with the given headers', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(204).end());
    const outcome = await newSender().send({ url: receiver.url, headers: { 'webhook-id': 'dlv_1', 'Content-Type': 'application/json' }, body });

    expect(outcome).toMatchObject({ ok: true, statusCode: 204, error: null, errorCode: null, responseBody: '', retryAfterMs: null });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received).toMatchObject({ method: 'POST', url: '/hooks?tenant=t1', body });
    expect(received?.headers['content-type']).toBe('application/json');
    expect(received?.headers['webhook-id']).toBe('dlv_1');
  });

  it('sends Uint8Array bodies byte for byte', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(200).end('ok'));
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body: new TextEncoder().encode(body) });
    expect(outcome).toMatchObject({ ok: true, statusCode: 200, responseBody: 'ok' });
    expect(receiver.requests[0]?.body).toBe(body);
  });

  it('records a 500 as a failure with the start of its body', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(500, { 'retry-after': '30' }).end('database on fire'));
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });
    // Retry-After counts on 429 and 503 only.
    expect(outcome).toMatchObject({ ok: false, statusCode: 500, error: 'HTTP 500', errorCode: 'http_status', responseBody: 'database on fire', retryAfterMs: null });
  });

  it('counts a 302 as a failure and does not follow it', async () => {
    const target = await startReceiver((_req, res) => res.writeHead(200).end());
    const receiver = await startReceiver((_req, res) => res.writeHead(302, { location: target.url }).end());
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });

    expect(outcome).toMatchObject({ ok: false, statusCode: 302, error: 'redirect not followed (HTTP 302)', errorCode: 'redirect' });
    expect(receiver.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(target.connections).toBe(0);
  });

  it('times out a receiver that never answers', async () => {
    const receiver = await startReceiver(() => {});
    const outcome = await newSender({ timeoutMs: 200 }).send({ url: receiver.url, headers: {}, body });

    expect(outcome).toMatchObject({ ok: false, statusCode: null, error: 'timeout after 200 ms', errorCode: 'timeout', responseBody: '' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(190);
    expect(outcome.durationMs).toBeLessThan(2_000);
  });

  it('times out a receiver that trickles its body forever', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const trickle = setInterval(() => res.write('x'), 10);
      res.on('close', () => clearInterval(trickle));
      cleanups.push(() => clearInterval(trickle));
    });
    // The cap is larger than what can trickle in before the deadline, so only the timer can end it.
    const outcome = await newSender({ timeoutMs: 300, maxResponseBytes: 64 * 1024 }).send({ url: receiver.url, headers: {}, body });

    expect(outcome).toMatchObject({ ok: false, statusCode: null, errorCode: 'timeout', error: 'timeout after 300 ms (reading body of HTTP 200)' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
    expect(outcome.durationMs).toBeLessThan(2_000);
  });

  it('keeps only the first 1 KB of a 5 MB answer and drops the connection for the rest', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.alloc(5 * 1024 * 1024, 'a')));
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });

    expect(outcome).toMatchObject({ ok: true, statusCode: 200, errorCode: null });
    expect(outcome.responseBody).toBe('a'.repeat(1024));
    // The client hung up instead of reading 5 MB: the server sees its socket close.
    await expect.poll(() => receiver.closedSockets, { timeout: 2_000 }).toBe(1);
  });

  it('cuts a multi-byte character at the cap without failing', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(400).end('é'.repeat(10)));
    const outcome = await newSender({ maxResponseBytes: 5 }).send({ url: receiver.url, headers: {}, body });
    expect(outcome).toMatchObject({ ok: false, statusCode: 400, errorCode: 'http_status', responseBody: 'éé\uFFFD' });
  });

  it('classifies a receiver that destroys the socket mid-request as connection_reset', async () => {
    const receiver = await startReceiver((req) => req.socket.destroy());
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });
    expect(outcome).toMatchObject({ ok: false, statusCode: null, errorCode: 'connection_reset', error: 'connection reset' });
  });

  it('classifies nothing listening as connection_refused', async () => {
    const receiver = await startReceiver(() => {});
    const server = servers.pop()!;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });
    expect(outcome).toMatchObject({ ok: false, statusCode: null, errorCode: 'connection_refused', error: 'connection refused' });
  });

  it('reads Retry-After seconds on a 429', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(429, { 'retry-after': '7' }).end('slow down'));
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });
    expect(outcome).toMatchObject({ ok: false, statusCode: 429, errorCode: 'http_status', retryAfterMs: 7_000, responseBody: 'slow down' });
  });

  it('reads Retry-After as an HTTP-date on a 503', async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const receiver = await startReceiver((_req, res) => res.writeHead(503, { 'retry-after': at }).end());
    const outcome = await newSender().send({ url: receiver.url, headers: {}, body });
    expect(outcome.statusCode).toBe(503);
    // HTTP-dates have one-second resolution.
    expect(outcome.retryAfterMs).toBeGreaterThan(55_000);
    expect(outcome.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('reuses keep-alive connections for sequential sends', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(200).end('ok'));
    const sender = newSender();
    for (let i = 0; i < 25; i += 1) {
      const outcome = await sender.send({ url: receiver.url, headers: { 'webhook-id': `dlv_${i}` }, body });
      expect(outcome.ok).toBe(true);
    }
    expect(receiver.requests).toHaveLength(25);
    expect(receiver.connections).toBeLessThanOrEqual(2);
  });

  it('ends as aborted when the caller aborts', async () => {
    const receiver = await startReceiver(() => {});
    const controller = new AbortController();
    const pending = newSender().send({ url: receiver.url, headers: {}, body, signal: controller.signal });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(1);
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, statusCode: null, errorCode: 'aborted' });
  });

  it('starts the timeout of a send beyond the origin\'s connections only when it is sent, and sends them in order', async () => {
    // Two paths of one origin (two endpoints there), one connection: each request is answered 500 ms
    // after it arrives, the timeout is 900 ms. The second send waits 500 ms for the connection, then
    // takes 500 ms itself: counted from the call (undici's queue) it timed out at 900 ms, 100 ms
    // before it was answered. Each send has 400 ms to spare for a busy machine.
    const receiver = await startReceiver((_req, res) => {
      const answer = setTimeout(() => res.writeHead(204).end(), 500);
      cleanups.push(() => clearTimeout(answer));
    });
    const sender = newSender({ timeoutMs: 900, maxConnectionsPerOrigin: 1 });
    const origin = new URL(receiver.url).origin;
    const outcomes = await Promise.all([sender.send({ url: `${origin}/a`, headers: {}, body }), sender.send({ url: `${origin}/b`, headers: {}, body })]);

    expect(outcomes.map((outcome) => outcome.errorCode)).toEqual([null, null]);
    expect(outcomes.every((outcome) => outcome.ok && outcome.durationMs < 900)).toBe(true);
    expect(receiver.requests.map((request) => request.url)).toEqual(['/a', '/b']);
    expect(receiver.connections).toBe(1);
  });

  it('ends a send waiting for a connection as aborted when the caller aborts, without sending it', async () => {
    const receiver = await startReceiver(() => {});
    const sender = newSender({ maxConnectionsPerOrigin: 1 });
    const first = new AbortController();
    const second = new AbortController();
    const sending = sender.send({ url: receiver.url, headers: {}, body, signal: first.signal });
    const waiting = sender.send({ url: receiver.url, headers: {}, body, signal: second.signal });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(1);
    second.abort();
    expect(await waiting).toMatchObject({ ok: false, statusCode: null, errorCode: 'aborted' });
    first.abort();
    expect(await sending).toMatchObject({ ok: false, errorCode: 'aborted' });
    // The connection it waited for went to nobody: a third send has it at once.
    const third = new AbortController();
    const later = sender.send({ url: receiver.url, headers: {}, body, signal: third.signal });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(2);
    third.abort();
    expect(await later).toMatchObject({ ok: false, errorCode: 'aborted' });
  });

  it('asks for headers given as a function when the send leaves, and ends one that cannot make them as a failure, unsent', async () => {
    const answers: (() => void)[] = [];
    const receiver = await startReceiver((_req, res) => answers.push(() => res.writeHead(204).end()));
    const sender = newSender({ maxConnectionsPerOrigin: 1 });
    const asked: string[] = [];
    const headersOf = (name: string) => () => {
      asked.push(name);
      return { 'x-made-for': name };
    };
    const first = sender.send({ url: receiver.url, headers: headersOf('first'), body });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(1);
    const second = sender.send({ url: receiver.url, headers: headersOf('second'), body });
    const broken = sender.send({
      url: receiver.url,
      headers: () => {
        throw new Error('no signing key');
      },
      body,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(asked).toEqual(['first']);

    answers.shift()!();
    expect(await first).toMatchObject({ ok: true });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(2);
    expect(asked).toEqual(['first', 'second']);
    expect(receiver.requests[1]!.headers['x-made-for']).toBe('second');
    answers.shift()!();
    expect(await second).toMatchObject({ ok: true });
    expect(await broken).toMatchObject({ ok: false, statusCode: null, errorCode: 'network', error: expect.stringContaining('no signing key') });
    expect(receiver.requests).toHaveLength(2);
    // Its connection was handed on: the next send goes out at once.
    const next = sender.send({ url: receiver.url, headers: {}, body });
    await expect.poll(() => receiver.requests.length, { timeout: 2_000 }).toBe(3);
    answers.shift()!();
    expect(await next).toMatchObject({ ok: true });
  });

  it("sends a URL's credentials as basic auth, percent-decoded, and not in the request line; the host is still judged", async () => {
    const expected = `Basic ${Buffer.from('bob:p@ss:wörd').toString('base64')}`;
    const receiver = await startReceiver((req, res) => res.writeHead(req.headers.authorization === expected ? 204 : 401).end());
    const withCredentials = receiver.url.replace('http://', 'http://bob:p%40ss%3Aw%C3%B6rd@');
    const sender = newSender();
    for (let n = 0; n < 2; n++) expect(await sender.send({ url: withCredentials, headers: {}, body })).toMatchObject({ ok: true, statusCode: 204 });
    expect(receiver.requests.map((request) => request.url)).toEqual(['/hooks?tenant=t1', '/hooks?tenant=t1']);
    // Without credentials in the URL, no authorization is made up.
    expect(await sender.send({ url: receiver.url, headers: {}, body })).toMatchObject({ statusCode: 401 });
    expect(receiver.requests[2]!.headers.authorization).toBeUndefined();
    // An explicit authorization header is the more specific: it wins over the URL's.
    await sender.send({ url: withCredentials, headers: { Authorization: 'Bearer explicit' }, body });
    expect(receiver.requests[3]!.headers.authorization).toBe('Bearer explicit');

    const guarded = newSender({ isBlockedAddress: (address) => address === '127.0.0.1' });
    expect(await guarded.send({ url: withCredentials, headers: {}, body })).toMatchObject({ errorCode: 'blocked_address' });
    expect(receiver.requests).toHaveLength(4);
  });

  it('never throws on a bad URL or after close', async () => {
    const sender = newSender();
    expect(await sender.send({ url: 'not a url', headers: {}, body })).toMatchObject({ ok: false, errorCode: 'network' });
    expect(await sender.send({ url: 'ftp://127.0.0.1/', headers: {}, body })).toMatchObject({ ok: false, errorCode: 'network' });
    await sender.close();
    expect(await sender.send({ url: 'http://127.0.0.1:9/', headers: {}, body })).toMatchObject({ ok: false, errorCode: 'aborted', error: 'sender closed' });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['7', 7_000],
    [' 0 ', 0],
    ['Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    ['Wed, 31 Dec 2025 23:00:00 GMT', 0],
    ['soon', null],
    ['-5', null],
    ['', null],
    [undefined, null],
  ])('%j is %j', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
