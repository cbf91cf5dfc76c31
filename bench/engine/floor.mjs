// The delivery contract's floor: what any Node process pays per event to keep Hookline's promises
// on this machine, with none of Hookline in it. `npm run bench` runs it as the contender "floor" and
// `bench:cpu-ab` takes it as a variant (`floor=bench/engine/floor.mjs`), beside a Hookline build.
//
// Per event, as Hookline's success path does it:
//   - the POST served by node:http, its API key's SHA-256 compared, its body parsed (JSON.parse);
//   - the envelope built (JSON.stringify of type, timestamp, data), the event and its delivery put to
//     LMDB through lmdb-js (msgpack, shared structures) and awaited on disk (commit, then `flushed`)
//     before the 202 with the event and delivery ids;
//   - the envelope sent, signed as Standard Webhooks says (HMAC-SHA256 of id.timestamp.body), through
//     an undici Pool of 50 connections to the receiver's origin, by `dispatch` (no response stream);
//   - the outcome put to LMDB (the attempt and the delivery's new head), not awaited, as Hookline's
//     write-behind.
// Left out, because they are Hookline's features and not the contract's I/O: validation beyond
// JSON.parse, routing, logs, metrics, the state machine and its transition log, the status index,
// de-duplication by event id, retries, the scheduler, rate limits. So Hookline's CPU per delivery over
// the floor's is what those cost, and the floor's over the ceiling sender's is what no implementation
// of the contract in Node can take back.
//
// Routes (all the benches use): GET /healthz, PUT /v1/webhook, GET /v1/webhook/secret, POST
// /v1/events, POST /v1/events/batch (one commit per request). Env: HOOKLINE_PORT, HOOKLINE_HOST,
// HOOKLINE_DATA_DIR, HOOKLINE_API_KEY (as `serveEnv` sets them). Argument: `serve` (ignored).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { open } from 'lmdb';
import { Pool } from 'undici';

const env = process.env;
const keyHash = createHash('sha256').update(env.HOOKLINE_API_KEY ?? '').digest();
const root = open({ path: env.HOOKLINE_DATA_DIR, noSubdir: false });
const structures = Symbol.for('structures');
const events = root.openDB({ name: 'events', sharedStructuresKey: structures });
const deliveries = root.openDB({ name: 'deliveries', sharedStructuresKey: structures });
const attempts = root.openDB({ name: 'attempts', sharedStructuresKey: structures });

const secretBytes = randomBytes(32);
const secret = `whsec_${secretBytes.toString('base64')}`;
let webhook = null; // { url, pool, path }
const idPrefix = randomBytes(4).toString('hex');
let sequence = 0;
const nextId = (kind) => `${kind}_${idPrefix}${(sequence++).toString(36)}`;

function authorized(request) {
  const header = request.headers.authorization ?? '';
  if (!header.startsWith('Bearer ')) return false;
  return timingSafeEqual(createHash('sha256').update(header.slice(7)).digest(), keyHash);
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function answer(response, status, body) {
  const text = body === undefined ? '' : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** Puts one event and its delivery; returns what is sent once they are on disk. */
function store(input, now) {
  const eventId = input.id ?? nextId('evt');
  const deliveryId = nextId('msg');
  const envelope = JSON.stringify({ type: input.type, timestamp: new Date(now).toISOString(), data: input.data });
  events.put(eventId, { id: eventId, type: input.type, createdAt: now, envelope });
  deliveries.put(deliveryId, { eventId, status: 'pending', attempts: 0, createdAt: now, nextAttemptAt: now });
  return { eventId, deliveryId, envelope };
}

/** Resolves once everything put so far is committed and on disk. */
async function durable() {
  await root.committed;
  await root.flushed;
}

/** One attempt through undici's dispatch (no response stream, no promise), as Hookline's sender. */
function send({ eventId, deliveryId, envelope }) {
  const started = Date.now();
  const timestamp = Math.floor(started / 1000);
  const signature = createHmac('sha256', secretBytes).update(`${deliveryId}.${timestamp}.`).update(envelope).digest('base64');
  let status = 0;
  const finish = () => {
    const now = Date.now();
    const succeeded = status >= 200 && status < 300;
    attempts.put(`${deliveryId}:1`, { at: started, status, durationMs: now - started });
    deliveries.put(deliveryId, { eventId, status: succeeded ? 'succeeded' : 'retrying', attempts: 1, createdAt: started, nextAttemptAt: succeeded ? null : now + 5000 });
  };
  webhook.pool.dispatch(
    {
      method: 'POST',
      path: webhook.path,
      headers: { 'content-type': 'application/json', 'webhook-id': deliveryId, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` },
      body: envelope,
    },
    {
      onRequestStart() {},
      onResponseStart(_controller, statusCode) {
        status = statusCode;
      },
      onResponseData() {},
      onResponseEnd: finish,
      onResponseError() {
        status = 0;
        finish();
      },
    },
  );
}

async function ingest(request, response, batch) {
  let body;
  try {
    body = JSON.parse(await readBody(request));
  } catch {
    return answer(response, 400, { error: { code: 'invalid_json', message: 'the body is not JSON', details: [] } });
  }
  const inputs = batch ? body.events : [body];
  if (!Array.isArray(inputs) || inputs.some((input) => typeof input?.type !== 'string')) return answer(response, 400, { error: { code: 'validation_failed', message: 'type is required', details: [] } });
  const now = Date.now();
  const stored = inputs.map((input) => store(input, now));
  await durable();
  const items = stored.map(({ eventId, deliveryId }) => ({ status: 202, id: eventId, deliveryId }));
  answer(response, 202, batch ? { data: items } : { id: items[0].id, deliveryId: items[0].deliveryId });
  for (const item of stored) send(item);
}

const server = http.createServer(async (request, response) => {
  try {
    if (request.url === '/healthz') return answer(response, 200, { status: 'ok' });
    if (!authorized(request)) return answer(response, 401, { error: { code: 'unauthorized', message: 'API key', details: [] } });
    if (request.method === 'POST' && request.url === '/v1/events') return await ingest(request, response, false);
    if (request.method === 'POST' && request.url === '/v1/events/batch') return await ingest(request, response, true);
    if (request.method === 'PUT' && request.url === '/v1/webhook') {
      const { callbackUrl } = JSON.parse(await readBody(request));
      const url = new URL(callbackUrl);
      await webhook?.pool.close();
      webhook = { url: callbackUrl, path: url.pathname + url.search, pool: new Pool(url.origin, { connections: 50, keepAliveTimeout: 60_000 }) };
      return answer(response, 200, { callbackUrl });
    }
    if (request.method === 'GET' && request.url === '/v1/webhook/secret') return answer(response, 200, { secret });
    answer(response, 404, { error: { code: 'not_found', message: request.url, details: [] } });
  } catch (error) {
    answer(response, 500, { error: { code: 'internal_error', message: String(error), details: [] } });
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(env.HOOKLINE_PORT), env.HOOKLINE_HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => root.close().then(() => process.exit(0))));
