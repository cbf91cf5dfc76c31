// NATS JetStream ingest bench (`npm run bench:nats`): the NATS inbound transport beside the embedded
// one (POST /v1/events), in the same run, every party in a process of its own, all on 127.0.0.1.
// It builds nothing: it runs the compiled `dist/` (run `npx tsc -p tsconfig.build.json` first).
//
// Parties: `node dist/cli/main.js serve` (fresh LMDB dir per scenario; for NATS scenarios with
// HOOKLINE_NATS_URL and a stream / subject prefix / durable of its own), a 204 receiver, and a
// producer: `publisher` (the SDK's publishEvent over JetStream, IN_FLIGHT publishes awaiting their
// ack) or `loadgen` (an undici Pool POSTing to /v1/events, CONCURRENCY in flight). This file is all
// of them: `node bench/nats.mjs receiver|publisher|loadgen` runs one party.
//
// Scenarios (each on a fresh pair, which first takes BENCH_WARMUP events through the same path at the
// same rate; the receiver's counters are reset before the measured events)
//   1. Throughput, BENCH_ROUNDS rounds, the transports taking turns: BENCH_N events of ~1 KB
//      (envelope size) as fast as the producer can; figure = N / (last receipt - first send), and the
//      serve process's CPU ms per delivery (from /proc). Transports (BENCH_TRANSPORTS, all by default):
//        nats         Hookline fed by the JetStream publisher;
//        embedded     Hookline fed one event per POST /v1/events;
//        batch        Hookline fed BENCH_BATCH (100) events per POST /v1/events/batch, BENCH_BATCH_CONCURRENCY
//                     (8) in flight (bench/engine/loadgen.mjs, as `npm run bench`): issue 12's target is
//                     NATS >= 0.8x this, so both are measured in the same run;
//        cluster      Hookline `serve --cluster`, one node of a cluster of its own (HOOKLINE_PARTITIONS,
//                     64), the default project, fed by the publisher on partitioned subjects: issue 12's
//                     target is >= 0.8x `nats`;
//        floor-nats, floor-batch, floor-cluster   the same loads on bench/engine/floor.mjs, the
//                     contract's floor (nothing of Hookline; floor-cluster adds cluster mode's changelog):
//                     whether 0.8x is reachable by any implementation here.
//   2. Latency at a fixed BENCH_RATE (1,000/s) for BENCH_RATE_SECONDS (10), open loop: the event's
//      data carries `sentAt` (taken just before the publish / POST); p50/p99 of receipt - sentAt.
//   Both scenarios run BENCH_ROUNDS rounds, the two transports taking turns (first one, then the
//   other first). Reported: medians over rounds, the ratio NATS / embedded (target >= 0.70), and a
//   last line of JSON. Each NATS scenario checks that the consumer acked everything, then deletes its stream.
//
// Env: BENCH_NATS_URL (nats://127.0.0.1:4222), BENCH_N (20000), BENCH_ROUNDS (3), BENCH_RATE (1000),
//      BENCH_TRANSPORTS (nats,embedded,batch,cluster,floor-nats,floor-batch,floor-cluster), BENCH_BATCH (100),
//      BENCH_BATCH_CONCURRENCY (8), BENCH_LEASE (5s, the cluster node's HOOKLINE_LEASE_TTL),
//      BENCH_RATE_SECONDS (10), BENCH_IN_FLIGHT (256), BENCH_CONCURRENCY (64), BENCH_SKIP (comma list
//      of: latency, throughput), BENCH_WARMUP (2000), BENCH_PROFILE=1 (--cpu-prof on the Hookline child, kept with the
//      logs), BENCH_KEEP=1 (keep temp dirs and logs). HOOKLINE_* variables reach the serve processes.
// Smoke run: BENCH_N=2000 BENCH_ROUNDS=1 BENCH_RATE_SECONDS=2 npm run bench:nats
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { busyCores, countReceipt, cpuSeconds, drive, eventPadding as padTo, freePort, jsonReport, launch as launchChild, listenReceiver, machineCpu, natsServerPid, nowMs, num, quantile as quantileOf, request, serveEnv, sleep, stopChild, waitFor } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const quantile = (sorted, p) => quantileOf(sorted, p, 2);
const EVENT_BYTES = num('EVENT_BYTES', 1024);

/** `{"type":…,"data":{"sentAt":…,"seq":…,"pad":"xx…"}}` sized so Hookline's envelope is ~EVENT_BYTES. */
const eventPadding = () => padTo(EVENT_BYTES);

/** Producer bookkeeping shared by publisher and loadgen; prints one JSON line at the end. */
function producerReport() {
  const acks = [];
  const state = { accepted: 0, errors: 0, firstSendAt: 0, lastAckAt: 0, bodyBytes: 0, acks };
  return {
    state,
    sent(t0, bytes) {
      if (!state.firstSendAt) {
        state.firstSendAt = t0;
        state.bodyBytes = bytes;
      }
    },
    acked(t0) {
      const t1 = nowMs();
      state.accepted++;
      acks.push(t1 - t0);
      state.lastAckAt = t1;
    },
    failed(error) {
      if (++state.errors <= 3) process.stderr.write(`producer error: ${error.message ?? error}\n`);
    },
    print(extra) {
      const sorted = Float64Array.from(acks).sort();
      const perS = Math.round(state.accepted / ((state.lastAckAt - state.firstSendAt) / 1000));
      process.stdout.write(`${JSON.stringify({ ...extra, accepted: state.accepted, errors: state.errors, first_send_at: state.firstSendAt, last_ack_at: state.lastAckAt, body_bytes: state.bodyBytes, send_per_s: perS, ack_p50_ms: quantile(sorted, 0.5), ack_p99_ms: quantile(sorted, 0.99) })}\n`);
    },
  };
}

// Party: JetStream publisher ----------------------------------------------------------------------

async function publisherMain() {
  const { connect } = await import('@nats-io/transport-node');
  const { publishEvent } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'nats.js')).href);
  const n = Number(env.N);
  const rate = Number(env.RATE || 0);
  const inFlight = Number(env.IN_FLIGHT || 256);
  const tag = env.TAG;
  const pad = eventPadding();
  const nc = await connect({ servers: env.NATS_URL, name: 'hookline-bench-publisher' });
  const report = producerReport();
  await drive(n, rate, inFlight, async (seq) => {
    const event = { id: `evt_${tag}_${seq}`, type: 'service.trigger.event', data: { sentAt: Number(nowMs().toFixed(3)), seq, pad } };
    const t0 = nowMs();
    report.sent(t0, JSON.stringify(event).length);
    // Retried until acked (same id: JetStream drops a repeat), so every event is published once.
    for (let attempt = 0; ; attempt++) {
      try {
        await publishEvent(nc, 'default', event, { subjectPrefix: env.PREFIX, ...(env.PARTITIONS ? { partitions: Number(env.PARTITIONS) } : {}) });
        report.acked(t0);
        return;
      } catch (error) {
        report.failed(error);
        if (attempt >= 20) return;
        await sleep(50);
      }
    }
  });
  await nc.drain();
  report.print({ n, rate, in_flight: inFlight });
}

// Party: HTTP load generator (embedded transport) -------------------------------------------------

async function loadgenMain() {
  const { Pool } = await import('undici');
  const target = new URL(env.TARGET);
  const n = Number(env.N);
  const rate = Number(env.RATE || 0);
  const concurrency = Number(env.CONCURRENCY || 64);
  const pad = eventPadding();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${env.API_KEY}` };
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
  const report = producerReport();
  await drive(n, rate, concurrency, async (seq) => {
    const body = `{"id":"evt_${env.TAG}_${seq}","type":"service.trigger.event","data":{"sentAt":${nowMs().toFixed(3)},"seq":${seq},"pad":"${pad}"}}`;
    const t0 = nowMs();
    report.sent(t0, body.length);
    try {
      const res = await pool.request({ method: 'POST', path: '/v1/events', headers, body });
      const text = await res.body.text();
      if (res.statusCode === 202) report.acked(t0);
      else report.failed(new Error(`${res.statusCode} ${text.slice(0, 200)}`));
    } catch (error) {
      report.failed(error);
    }
  });
  await pool.close();
  report.print({ n, rate, concurrency });
}

// Party: 204 receiver -----------------------------------------------------------------------------

async function receiverMain() {
  const { verifyWebhookSignature } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'index.js')).href);
  const SENT_AT = '"sentAt":';
  let secret = null;
  let s;
  const reset = () => (s = { received: 0, firstAt: 0, lastAt: 0, lat: [], ids: new Set(), duplicates: 0, verified: 0, badSignatures: 0 });
  reset();
  const server = http.createServer((req, res) => {
    if (req.url === '/stats') {
      const lat = Float64Array.from(s.lat).sort();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: s.received, unique: s.ids.size, duplicates: s.duplicates, first_at: s.firstAt, last_at: s.lastAt, p50_ms: quantile(lat, 0.5), p90_ms: quantile(lat, 0.9), p99_ms: quantile(lat, 0.99), max_ms: quantile(lat, 1), verified: s.verified, bad_signatures: s.badSignatures }));
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const t = nowMs();
      const body = Buffer.concat(chunks);
      if (req.url === '/secret') {
        secret = JSON.parse(body.toString()).secret;
        reset();
        res.writeHead(204).end();
        return;
      }
      if (req.url === '/reset') {
        reset();
        res.writeHead(204).end();
        return;
      }
      const text = body.toString('latin1');
      countReceipt(s, text, t);
      const at = text.indexOf(SENT_AT);
      if (at >= 0) s.lat.push(t - Number.parseFloat(text.slice(at + SENT_AT.length, at + SENT_AT.length + 24)));
      if (secret && s.received % 100 === 1) {
        const h = req.headers;
        verifyWebhookSignature({ id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'], body, secret }).then(
          (ok) => (ok ? s.verified++ : s.badSignatures++),
          () => s.badSignatures++,
        );
      }
      res.writeHead(204).end();
    });
  });
  listenReceiver(server, Number(env.PORT));
}

// Orchestration ----------------------------------------------------------------------------------

const SERVE_JS = path.join(root, 'dist', 'cli', 'main.js');
const FLOOR_JS = path.join(here, 'engine', 'floor.mjs');
const LOADGEN_JS = path.join(here, 'engine', 'loadgen.mjs');
const NATS_URL = env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const N = num('BENCH_N', 20_000);
const ROUNDS = num('BENCH_ROUNDS', 3);
const RATE = num('BENCH_RATE', 1000);
const RATE_SECONDS = num('BENCH_RATE_SECONDS', 10);
const IN_FLIGHT = num('BENCH_IN_FLIGHT', 256);
const WARMUP = num('BENCH_WARMUP', 2000);
const CONCURRENCY = num('BENCH_CONCURRENCY', 64);
const BATCH = num('BENCH_BATCH', 100);
const BATCH_CONCURRENCY = num('BENCH_BATCH_CONCURRENCY', 8);
const TRANSPORTS = (env.BENCH_TRANSPORTS ?? 'nats,embedded,batch,cluster,floor-nats,floor-batch,floor-cluster').split(',').map((s) => s.trim()).filter(Boolean);
/** What each transport runs and how it is fed. */
const TRANSPORT = {
  nats: { entry: SERVE_JS, feed: 'nats' },
  embedded: { entry: SERVE_JS, feed: 'post' },
  batch: { entry: SERVE_JS, feed: 'batch' },
  cluster: { entry: SERVE_JS, feed: 'nats', cluster: true },
  'floor-nats': { entry: FLOOR_JS, feed: 'nats' },
  'floor-batch': { entry: FLOOR_JS, feed: 'batch' },
  'floor-cluster': { entry: FLOOR_JS, feed: 'nats', cluster: true },
};
/** Cluster mode's partitions (HOOKLINE_PARTITIONS, as a cluster node reads it). */
const PARTITIONS = num('HOOKLINE_PARTITIONS', 64);
for (const name of TRANSPORTS) if (!TRANSPORT[name]) throw new Error(`BENCH_TRANSPORTS: unknown ${name}; use any of ${Object.keys(TRANSPORT).join(', ')}`);
const SKIP = new Set((env.BENCH_SKIP ?? '').split(',').map((s) => s.trim()).filter(Boolean));
const PROFILE = env.BENCH_PROFILE === '1';
const KEEP = env.BENCH_KEEP === '1' || PROFILE;
const API_KEY = `hk_bench_${randomBytes(8).toString('hex')}`;
const log = (...parts) => process.stderr.write(`[bench:nats ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

const children = new Set();
const tempDirs = new Set();
const streams = new Set();
let nc = null;
/** The NATS server's own pid when it runs here (its CPU is reported beside Hookline's), else null. */
const natsPid = natsServerPid(new URL(NATS_URL.replace(/^nats:/, 'http:')).port || 4222);

function launch(args, { extraEnv = {}, logFile = null, nodeArgs = [] } = {}) {
  return launchChild(process.execPath, [...nodeArgs, ...args], { cwd: root, extraEnv, logFile, children });
}

/** A receiver and a Hookline (or the floor, `entry`; NATS-fed when `names` is given), webhook configured, on a fresh dir. */
async function startPair(label, names, entry = SERVE_JS, cluster = false) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-bench-nats-${label}-`));
  tempDirs.add(dir);
  const receiverPort = await freePort();
  const receiver = launch([fileURLToPath(import.meta.url), 'receiver'], { extraEnv: { PORT: String(receiverPort) }, logFile: path.join(dir, 'receiver.log') });
  const receiverUrl = `http://127.0.0.1:${receiverPort}`;
  await waitFor('receiver up', () => request('GET', `${receiverUrl}/stats`), { timeoutMs: 10_000, child: receiver });
  const port = await freePort();
  const natsEnv = names ? { HOOKLINE_NATS_URL: NATS_URL, HOOKLINE_NATS_STREAM: names.stream, HOOKLINE_NATS_SUBJECT_PREFIX: names.prefix, HOOKLINE_NATS_DURABLE: names.durable } : {};
  // One node of a cluster of its own, as `BENCH_NODES=1 BENCH_PROJECTS=1 npm run bench:cluster` runs it.
  const clusterEnv = cluster ? { HOOKLINE_CLUSTER: '1', HOOKLINE_NODE_ID: 'bench-0', HOOKLINE_CLUSTER_SUBJECT_PREFIX: names.cluster, HOOKLINE_PARTITIONS: String(PARTITIONS), HOOKLINE_LEASE_TTL: env.BENCH_LEASE ?? '5s' } : {};
  const node = launch([entry, 'serve'], {
    nodeArgs: PROFILE ? ['--cpu-prof', '--cpu-prof-dir', path.join(dir, 'profile')] : [],
    extraEnv: {
      ...serveEnv({ dataDir: path.join(dir, 'data'), port, apiKey: API_KEY }),
      HOOKLINE_LOG_LEVEL: env.HOOKLINE_LOG_LEVEL ?? 'warn',
      // The embedded path is measured without the per-project API rate limit (NATS has none).
      HOOKLINE_RATE_LIMIT: env.HOOKLINE_RATE_LIMIT ?? '0',
      ...natsEnv,
      ...clusterEnv,
    },
    logFile: path.join(dir, 'hookline.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('hookline /healthz', () => request('GET', `${url}/healthz`), { timeoutMs: 60_000, intervalMs: 20, child: node }).catch((error) => {
    throw new Error(`${error.message}\n${readFileSync(path.join(dir, 'hookline.log'), 'utf8').slice(-2000)}`);
  });
  if (cluster && entry === SERVE_JS) {
    await waitFor('the node to own every partition', async () => ((await request('GET', `${url}/healthz`)).cluster?.partitions?.length === PARTITIONS ? true : null), { timeoutMs: 60_000, intervalMs: 100, child: node });
  }
  await request('PUT', `${url}/v1/webhook`, { key: API_KEY, body: { callbackUrl: `${receiverUrl}/hook`, status: 'active', eventTypes: ['service.trigger.event'] } });
  const { secret } = await request('GET', `${url}/v1/webhook/secret`, { key: API_KEY });
  await request('POST', `${receiverUrl}/secret`, { body: { secret } });
  return { dir, node, url, receiver, receiverUrl, stats: () => request('GET', `${receiverUrl}/stats`) };
}

async function runProducer(mode, extraEnv) {
  const cp = launch(mode === 'batch' ? [LOADGEN_JS] : [fileURLToPath(import.meta.url), mode], { extraEnv });
  const report = await jsonReport(cp, mode);
  if (report.errors > 0) log(`${mode}: ${report.errors} errors`);
  return report;
}

async function waitDelivered(pair, n) {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const s = await pair.stats();
    if (s.unique >= n) return s;
    if (s.received !== last) {
      last = s.received;
      lastChange = Date.now();
    }
    if (pair.node.exitCode !== null) throw new Error(`hookline exited (${s.unique}/${n} delivered)`);
    if (Date.now() - lastChange > 30_000) {
      log(`stalled: ${s.unique}/${n} delivered`);
      return { ...s, timedOut: true };
    }
    await sleep(25);
  }
}

function uniqueNames(label) {
  const suffix = randomBytes(4).toString('hex');
  const names = { stream: `HOOKLINE_BENCH_${label}_${suffix}`, prefix: `hlbench.${suffix}.events`, durable: `hookline_bench_${suffix}`, cluster: `hlbench.${suffix}.cluster` };
  streams.add(names.stream);
  return names;
}

/** Consumer of a finished NATS scenario: everything delivered and acked. */
async function consumerSettled(names) {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const manager = await jetstreamManager(nc);
  return waitFor(
    'consumer to ack everything',
    async () => {
      const stream = await manager.streams.info(names.stream);
      const info = await manager.consumers.info(names.stream, names.durable);
      const ok = info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq === stream.state.last_seq;
      return ok ? { lastSeq: stream.state.last_seq, redelivered: info.num_redelivered } : null;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

/** Deletes a scenario's stream and what cluster mode made beside it (changelog, directory and lease buckets). */
async function deleteStream(name) {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const manager = await jetstreamManager(nc);
  for (const stream of [name, `${name}_CHANGELOG`, `KV_${name}_directory`, `KV_${name}_leases`]) await manager.streams.delete(stream).catch(() => false);
  streams.delete(name);
}

/** One scenario: a fresh pair, `n` events through `transport` at `rate` (0 = as fast as possible). */
async function scenario(transport, { n, rate, label }) {
  const { entry, feed, cluster = false } = TRANSPORT[transport];
  const names = feed === 'nats' ? uniqueNames(label) : null;
  const pair = await startPair(`${transport}-${label}`, names, entry, cluster);
  try {
    const tag = `${label}${randomBytes(3).toString('hex')}`;
    const produce = (count, runTag) => {
      if (feed === 'nats') return runProducer('publisher', { NATS_URL, PREFIX: names.prefix, ...(cluster ? { PARTITIONS: String(PARTITIONS) } : {}), N: String(count), RATE: String(rate), IN_FLIGHT: String(IN_FLIGHT), TAG: runTag });
      if (feed === 'batch') return runProducer('batch', { TARGET: pair.url, API_KEY, N: String(count), RATE: '0', CONCURRENCY: String(BATCH_CONCURRENCY), BATCH: String(BATCH) });
      return runProducer('loadgen', { TARGET: pair.url, API_KEY, N: String(count), RATE: String(rate), CONCURRENCY: String(CONCURRENCY), TAG: runTag });
    };
    if (WARMUP > 0) {
      // The same path, same rate, first: JIT, LMDB's first pages and the receiver connections are
      // ready before the clock starts, so a fresh process's first second does not weigh on the figures.
      await produce(WARMUP, `${tag}w`);
      await waitDelivered(pair, WARMUP);
      await request('POST', `${pair.receiverUrl}/reset`);
    }
    const cpu0 = cpuSeconds(pair.node.pid);
    const nats0 = natsPid ? cpuSeconds(natsPid) : NaN;
    const machine0 = machineCpu();
    const t0 = performance.now();
    const producer = await produce(n, tag);
    const s = await waitDelivered(pair, n);
    const wallS = (performance.now() - t0) / 1000;
    const cpuS = cpuSeconds(pair.node.pid) - cpu0;
    const cpuCores = cpuS / wallS;
    // The rest of the machine: the producer, the receiver and (NATS paths) nats-server share the 2 cores.
    const machineCores = busyCores(machine0, machineCpu(), wallS);
    const natsCores = natsPid ? (cpuSeconds(natsPid) - nats0) / wallS : NaN;
    // A cluster node consumes with a durable per partition: its acks are checked by bench:cluster's runs.
    const consumer = names && !cluster ? await consumerSettled(names) : null;
    const seconds = (s.last_at - producer.first_send_at) / 1000;
    return {
      transport, n, rate, warmup: WARMUP,
      perS: Math.round(s.unique / seconds),
      sendPerS: producer.send_per_s ?? producer.ingest_per_s,
      cpuMsPerDelivery: Number(((cpuS * 1000) / s.unique).toFixed(3)),
      ackP50: producer.ack_p50_ms, ackP99: producer.ack_p99_ms,
      p50: s.p50_ms, p90: s.p90_ms, p99: s.p99_ms, max: s.max_ms,
      unique: s.unique, received: s.received, duplicates: s.duplicates,
      verified: s.verified, badSignatures: s.bad_signatures,
      cpuCores: Number(cpuCores.toFixed(2)),
      machineCores: Number(machineCores.toFixed(2)),
      natsCores: Number(natsCores.toFixed(2)),
      producerErrors: producer.errors,
      consumer,
      timedOut: !!s.timedOut,
    };
  } finally {
    await stopChild(pair.node);
    await stopChild(pair.receiver);
    if (names) await deleteStream(names.stream);
    if (PROFILE) log(`profile of hookline (${transport} ${label}): ${path.join(pair.dir, 'profile')}`);
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : null;
};

function cleanup() {
  for (const cp of children) cp.kill('SIGKILL');
  if (!KEEP) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  else for (const dir of tempDirs) log(`kept ${dir}`);
}

async function main() {
  if (!existsSync(SERVE_JS)) throw new Error(`${SERVE_JS} is missing: run npx tsc -p tsconfig.build.json first`);
  const { connect } = await import('@nats-io/transport-node');
  nc = await connect({ servers: NATS_URL, name: 'hookline-bench' }).catch((error) => {
    throw new Error(`cannot reach NATS at ${NATS_URL} (${error.message}); start nats-server -js or set BENCH_NATS_URL`);
  });
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  log(`NATS ${NATS_URL} (server ${nc.info?.version}), N=${N}, warm-up ${WARMUP}, rounds=${ROUNDS}, rate=${RATE}/s for ${RATE_SECONDS}s, publisher in flight=${IN_FLIGHT}, HTTP concurrency=${CONCURRENCY}, ${os.cpus().length} cores, node ${process.version}`);
  const results = { throughput: Object.fromEntries(TRANSPORTS.map((name) => [name, []])), latency: { nats: [], embedded: [] } };
  try {
    if (!SKIP.has('throughput')) {
      for (let round = 1; round <= ROUNDS; round++) {
        // Alternate the order, so no transport always gets the warmer (or the busier) machine.
        const order = round % 2 ? TRANSPORTS : [...TRANSPORTS].reverse();
        for (const transport of order) {
          const result = await scenario(transport, { n: N, rate: 0, label: `t${round}` });
          results.throughput[transport].push(result);
          log(`throughput round ${round} ${transport}: ${result.perS}/s delivered (producer ${result.sendPerS}/s, ack p50 ${result.ackP50} ms, serve CPU ${result.cpuCores} cores, ${result.cpuMsPerDelivery} ms per delivery, machine ${result.machineCores} cores busy, nats-server ${result.natsCores}, ${result.unique}/${N} unique, ${result.duplicates} duplicates${result.consumer ? `, consumer acked to seq ${result.consumer.lastSeq}` : ''})`);
        }
      }
    }
    if (!SKIP.has('latency')) {
      for (let round = 1; round <= ROUNDS; round++) {
        const order = (round % 2 ? ['nats', 'embedded'] : ['embedded', 'nats']).filter((transport) => TRANSPORTS.includes(transport));
        for (const transport of order) {
          const result = await scenario(transport, { n: Math.round(RATE * RATE_SECONDS), rate: RATE, label: `l${round}` });
          results.latency[transport].push(result);
          log(`latency round ${round} ${transport} at ${RATE}/s: p50 ${result.p50} ms, p90 ${result.p90} ms, p99 ${result.p99} ms, max ${result.max} ms (${result.unique} delivered; producer sent ${result.sendPerS}/s, its ${transport === 'nats' ? 'JetStream' : 'HTTP'} ack p50 ${result.ackP50} ms p99 ${result.ackP99} ms; hookline CPU ${result.cpuCores} cores)`);
        }
      }
    }
  } finally {
    for (const stream of [...streams]) await deleteStream(stream);
    await nc.close();
    cleanup();
  }

  const throughputOf = (transport) => results.throughput[transport] ?? [];
  const natsPerS = median(throughputOf('nats').map((r) => r.perS));
  const embeddedPerS = median(throughputOf('embedded').map((r) => r.perS));
  const ratio = natsPerS && embeddedPerS ? Number((natsPerS / embeddedPerS).toFixed(3)) : null;
  /** The median over rounds of a/b, each taken within its round (the machine changes between rounds). */
  const ratioInRounds = (a, b) => median(throughputOf(a).map((r, index) => (throughputOf(b)[index] ? r.perS / throughputOf(b)[index].perS : NaN)).filter(Number.isFinite));
  const rounded = (value, digits = 3) => (value === null || value === undefined ? null : Number(value.toFixed(digits)));
  const all = [...Object.values(results.throughput).flat(), ...results.latency.nats, ...results.latency.embedded];
  const latencyOf = (transport, key) => median(results.latency[transport].map((r) => r[key]));
  const summary = {
    bench: 'nats',
    n: N,
    rounds: ROUNDS,
    nats_per_s: natsPerS,
    embedded_per_s: embeddedPerS,
    nats_rounds: throughputOf('nats').map((r) => r.perS),
    embedded_rounds: throughputOf('embedded').map((r) => r.perS),
    ratio,
    target_ratio: 0.7,
    target_met: ratio === null ? null : ratio >= 0.7,
    per_s: Object.fromEntries(TRANSPORTS.map((name) => [name, median(throughputOf(name).map((r) => r.perS))])),
    machine_cores: Object.fromEntries(TRANSPORTS.map((name) => [name, median(throughputOf(name).map((r) => r.machineCores))])),
    serve_cores: Object.fromEntries(TRANSPORTS.map((name) => [name, median(throughputOf(name).map((r) => r.cpuCores))])),
    cpu_ms_per_delivery: Object.fromEntries(TRANSPORTS.map((name) => [name, median(throughputOf(name).map((r) => r.cpuMsPerDelivery))])),
    rounds_per_s: Object.fromEntries(TRANSPORTS.map((name) => [name, throughputOf(name).map((r) => r.perS)])),
    nats_to_batch: rounded(ratioInRounds('nats', 'batch')),
    floor_nats_to_floor_batch: rounded(ratioInRounds('floor-nats', 'floor-batch')),
    nats_to_floor_nats: rounded(ratioInRounds('nats', 'floor-nats')),
    batch_to_floor_batch: rounded(ratioInRounds('batch', 'floor-batch')),
    cluster_to_nats: rounded(ratioInRounds('cluster', 'nats')),
    floor_cluster_to_floor_nats: rounded(ratioInRounds('floor-cluster', 'floor-nats')),
    target_cluster_to_nats: 0.8,
    target_nats_to_batch: 0.8,
    rate: RATE,
    rate_seconds: RATE_SECONDS,
    warmup: WARMUP,
    nats_p50_ms: latencyOf('nats', 'p50'),
    nats_p99_ms: latencyOf('nats', 'p99'),
    embedded_p50_ms: latencyOf('embedded', 'p50'),
    embedded_p99_ms: latencyOf('embedded', 'p99'),
    nats_latency_rounds: results.latency.nats.map((r) => [r.p50, r.p99]),
    embedded_latency_rounds: results.latency.embedded.map((r) => [r.p50, r.p99]),
    duplicates: all.reduce((sum, r) => sum + r.duplicates, 0),
    bad_signatures: all.reduce((sum, r) => sum + r.badSignatures, 0),
    verified_samples: all.reduce((sum, r) => sum + r.verified, 0),
    load_average: os.loadavg().map((v) => Number(v.toFixed(2))),
  };
  process.stdout.write(`\nNATS JetStream ingest vs embedded (median of ${ROUNDS} rounds, N=${N}):\n`);
  process.stdout.write(`  throughput  nats ${natsPerS}/s  embedded ${embeddedPerS}/s  ratio ${ratio} (target >= 0.70: ${summary.target_met ? 'met' : 'missed'})\n`);
  for (const name of TRANSPORTS) process.stdout.write(`  ${name.padEnd(12)} ${summary.per_s[name]}/s, ${summary.cpu_ms_per_delivery[name]} CPU ms per delivery, serve ${summary.serve_cores[name]} of the machine's ${summary.machine_cores[name]} busy cores (rounds: ${summary.rounds_per_s[name].join(', ')})\n`);
  if (summary.cluster_to_nats !== null) process.stdout.write(`  cluster, 1 node / NATS (issue 12: >= 0.8), median of the rounds' ratios: Hookline ${summary.cluster_to_nats}${summary.floor_cluster_to_floor_nats !== null ? `, the floor ${summary.floor_cluster_to_floor_nats}` : ''}\n`);
  if (summary.nats_to_batch !== null) process.stdout.write(`  NATS / batch (issue 12: >= 0.8), median of the rounds' ratios: Hookline ${summary.nats_to_batch}${summary.floor_nats_to_floor_batch !== null ? `, the floor ${summary.floor_nats_to_floor_batch}` : ''}\n`);
  if (summary.nats_p50_ms !== null) process.stdout.write(`  latency at ${RATE}/s (median of ${ROUNDS} rounds)  nats p50 ${summary.nats_p50_ms} ms p99 ${summary.nats_p99_ms} ms  embedded p50 ${summary.embedded_p50_ms} ms p99 ${summary.embedded_p99_ms} ms\n`);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  if (env.BENCH_STRICT === '1' && summary.target_met === false) process.exitCode = 2;
}

const mode = process.argv[2];
const parties = { receiver: receiverMain, publisher: publisherMain, loadgen: loadgenMain };
(parties[mode] ?? main)().catch((error) => {
  process.stderr.write(`bench:nats: ${error.stack ?? error.message}\n`);
  if (!parties[mode]) cleanup();
  process.exit(1);
});
