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
// With HOOKLINE_NATS_URL (`npm run bench:nats` runs it so, as the contender "floor-nats"), events also
// come from JetStream as Hookline's NATS transport takes them: a durable pull consumer (explicit acks,
// 512 per pull, max_ack_pending 2,048) on HOOKLINE_NATS_STREAM / HOOKLINE_NATS_SUBJECT_PREFIX /
// HOOKLINE_NATS_DURABLE; at most 256 messages a turn are parsed and put, and once they are on disk each
// is acked, its verdict published (README, NATS mode: part of Hookline's contract) and its attempt sent.
//
// With HOOKLINE_CLUSTER=1 as well (the contender "floor-cluster"), what cluster mode adds to that by
// contract: each hand-over's events and deliveries are appended to a JetStream changelog (stream
// `<HOOKLINE_NATS_STREAM>_CHANGELOG`, subject `<HOOKLINE_CLUSTER_SUBJECT_PREFIX>.0.log`), and a message
// is acked only once both LMDB and JetStream hold it; each attempt's outcome is appended as a step.
// Appends are group-committed as Hookline's are (one batch in flight, the others wait and go
// together): this is one partition's changelog, what one project's traffic uses. Left out: the
// fencing header, and the attempt's start, which Hookline appends (and awaits) before each send so
// that a new owner logs an attempt that may have reached the receiver.
//
// Routes (all the benches use): GET /healthz, PUT /v1/webhook, GET /v1/webhook/secret, POST
// /v1/events, POST /v1/events/batch (one commit per request). Env: HOOKLINE_PORT, HOOKLINE_HOST,
// HOOKLINE_DATA_DIR, HOOKLINE_API_KEY (as `serveEnv` sets them). Argument: `serve` (ignored).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { open } from 'lmdb';
import { pack } from 'msgpackr';
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
  const envelope = JSON.stringify({ version: 'v1', id: eventId, type: input.type, metadata: input.metadata ?? {}, data: input.data, timestamp: new Date(now).toISOString() });
  const event = { id: eventId, type: input.type, createdAt: now, envelope };
  const delivery = { id: deliveryId, eventId, status: 'pending', attempts: 0, createdAt: now, nextAttemptAt: now };
  events.put(eventId, event);
  deliveries.put(deliveryId, delivery);
  return { eventId, deliveryId, envelope, event, delivery };
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
    const attempt = { at: started, status, durationMs: now - started };
    attempts.put(`${deliveryId}:1`, attempt);
    deliveries.put(deliveryId, { eventId, status: succeeded ? 'succeeded' : 'retrying', attempts: 1, createdAt: started, nextAttemptAt: succeeded ? null : now + 5000 });
    // A step lost with a failed append is the next owner's to redo: nothing waits on it here.
    changelog?.append([['s', 'default', { id: deliveryId, changes: [{ status: succeeded ? 'succeeded' : 'retrying', attempt }] }]]).catch(() => {});
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
/** Cluster mode's changelog (see the top of this file), or null on a single node. */
let changelog = null;

/** One partition's changelog on JetStream: appends group-committed, one publish in flight. */
async function openChangelog(connection, manager, jetstream) {
  const { StorageType } = await import('@nats-io/jetstream');
  const name = `${env.HOOKLINE_NATS_STREAM ?? 'HOOKLINE_EVENTS'}_CHANGELOG`;
  const subject = `${env.HOOKLINE_CLUSTER_SUBJECT_PREFIX ?? 'hookline.cluster'}.0.log`;
  if (!(await manager.streams.info(name).catch(() => null))) await manager.streams.add({ name, subjects: [subject], storage: StorageType.File });
  const js = jetstream(connection);
  let waiting = [];
  let waiters = [];
  let inFlight = false;
  const flush = () => {
    if (inFlight || waiting.length === 0) return;
    inFlight = true;
    const [records, settle] = [waiting, waiters];
    [waiting, waiters] = [[], []];
    js.publish(subject, Buffer.concat(records.map((record) => pack(record)))).then(
      () => settle.forEach(([resolve]) => resolve()),
      (error) => settle.forEach(([, reject]) => reject(error)),
    ).finally(() => {
      inFlight = false;
      flush();
    });
  };
  return {
    /** Resolves once JetStream has stored the batch holding `records`. */
    append(records) {
      waiting.push(...records);
      const stored = new Promise((resolve, reject) => waiters.push([resolve, reject]));
      flush();
      return stored;
    },
  };
}

/** JetStream ingest, as Hookline's NATS transport does it (see the top of this file). */
async function consumeNats() {
  const { connect, nanos } = await import('@nats-io/transport-node');
  const { AckPolicy, DeliverPolicy, StorageType, jetstream, jetstreamManager } = await import('@nats-io/jetstream');
  const stream = env.HOOKLINE_NATS_STREAM ?? 'HOOKLINE_EVENTS';
  const prefix = env.HOOKLINE_NATS_SUBJECT_PREFIX ?? 'hookline.events';
  const durableName = env.HOOKLINE_NATS_DURABLE ?? 'hookline';
  const connection = await connect({ servers: env.HOOKLINE_NATS_URL, noAsyncTraces: true });
  const manager = await jetstreamManager(connection);
  if (!(await manager.streams.info(stream).catch(() => null))) await manager.streams.add({ name: stream, subjects: [`${prefix}.>`], storage: StorageType.File, duplicate_window: nanos(120_000) });
  await manager.consumers.add(stream, { durable_name: durableName, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: `${prefix}.>`, max_ack_pending: 2048, ack_wait: nanos(30_000) });
  if (env.HOOKLINE_CLUSTER === '1') changelog = await openChangelog(connection, manager, jetstream);
  const messages = await (await jetstream(connection).consumers.get(stream, durableName)).consume({ max_messages: 512 });
  const decoder = new TextDecoder();
  let arrived = [];
  const handOver = () => {
    const batch = arrived.length > 256 ? arrived.splice(0, 256) : arrived.splice(0);
    if (arrived.length > 0) setImmediate(handOver);
    const now = Date.now();
    const stored = batch.map((message) => ({ message, item: store(JSON.parse(decoder.decode(message.data)), now) }));
    const replicated = changelog ? changelog.append(stored.flatMap(({ item }) => [['e', 'default', item.event], ['d', 'default', item.delivery]])) : null;
    Promise.all([durable(), replicated]).then(() => {
      for (const { message, item } of stored) {
        message.ack();
        const projectId = message.subject.slice(message.subject.lastIndexOf('.') + 1);
        connection.publish(`_HOOKLINE.verdicts.${prefix}.${item.eventId}`, JSON.stringify({ verdict: 'accepted', id: item.eventId, projectId, deliveryId: item.deliveryId, duplicate: false }));
        send(item);
      }
    }, () => {
      // Not stored everywhere: JetStream sends them again.
      for (const { message } of stored) message.nak(1000);
    });
  };
  const consumed = (async () => {
    for await (const message of messages) if (arrived.push(message) === 1) setImmediate(handOver);
  })();
  consumed.catch((error) => {
    process.stderr.write(`floor: NATS ingest failed: ${error.stack ?? error}\n`);
    process.exit(1);
  });
}

// As Hookline: the consumer is up before the node answers /healthz.
if (env.HOOKLINE_NATS_URL) await consumeNats();

server.keepAliveTimeout = 65_000;
server.listen(Number(env.HOOKLINE_PORT), env.HOOKLINE_HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => root.close().then(() => process.exit(0))));
