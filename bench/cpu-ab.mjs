// CPU per delivery of two (or more) builds, compared in short interleaved bursts (`npm run bench:cpu-ab`).
// On a shared machine the CPU a process spends per delivery moves by 20% and more from one run to the
// next with what else runs (other processes on the sibling hyperthread, caches). Whole bench runs one
// after another cannot show a change of a few percent; here every variant's serve process runs at
// once, idle but for its own bursts, and bursts of BENCH_AB_BURST events (one per POST, BENCH_AB_
// CONCURRENCY in flight) go to each variant in turn (A B, then B A, ...), so that each pair of bursts
// meets the same load. Per burst: the serve process's CPU (utime + stime, /proc) from the first POST
// until its receiver has every delivery, divided by the burst's events.
//
// Env:
//   BENCH_AB                  label=dir[|node options],... each dir holds a built `dist/` (e.g. a copy
//                             of the repo's dist per commit); `base=/tmp/a,new=/tmp/b|--max-semi-space-size=64`.
//                             A path ending in .mjs is run as the serve process itself: the contract's
//                             floor, `floor=bench/engine/floor.mjs` (http and batch paths only)
//   BENCH_AB_BURSTS [20]      bursts per variant
//   BENCH_AB_BURST [3000]     events per burst
//   BENCH_AB_CONCURRENCY [64] POSTs in flight
//   BENCH_AB_LOG_DIR          write each serve process's output to <dir>/<label>.log (e.g. with --trace-gc)
//   BENCH_AB_WARMUP [5000]    events per variant first, not measured (JIT, LMDB's first pages)
//   BENCH_AB_PATH [http]      how events reach every variant, or a comma list with one per variant:
//                             http: one event per POST /v1/events, BENCH_AB_CONCURRENCY in flight;
//                             batch: BENCH_AB_BATCH (100) per POST /v1/events/batch, BENCH_AB_BATCH_
//                             CONCURRENCY (8) in flight; nats: the serve process consumes a JetStream
//                             stream of its own (HOOKLINE_NATS_URL), and the bursts are JetStream
//                             publishes from this process, BENCH_AB_CONCURRENCY awaiting their ack
//                             (as the SDK's publishEvent: Nats-Msg-Id = body id)
//   BENCH_NATS_URL [nats://127.0.0.1:4222]
// Prints one line per burst pair and, last, one JSON object: per variant the median and mean CPU ms
// per delivery over its bursts, each variant's median ratio to the first over the burst pairs, and its
// serve process's peak RSS (VmHWM).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { cpuSeconds, eventPadding, freePort, killTree, launch, nowMs, num, procMemory, quantile, request, serveEnv, sleep, stopChild, waitFor } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const BURSTS = num('BENCH_AB_BURSTS', 20);
const BURST = num('BENCH_AB_BURST', 3000);
const CONCURRENCY = num('BENCH_AB_CONCURRENCY', 64);
const WARMUP = num('BENCH_AB_WARMUP', 5000);
const PATHS = (process.env.BENCH_AB_PATH ?? 'http').split(',');
const BATCH = num('BENCH_AB_BATCH', 100);
const BATCH_CONCURRENCY = num('BENCH_AB_BATCH_CONCURRENCY', 8);
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const LOG_DIR = process.env.BENCH_AB_LOG_DIR;
const API_KEY = 'hk_bench_' + Math.random().toString(36).slice(2);
const variants = (process.env.BENCH_AB ?? '').split(',').filter(Boolean).map((spec, index) => {
  const label = spec.slice(0, spec.indexOf('='));
  const [dir, nodeOptions = ''] = spec.slice(spec.indexOf('=') + 1).split('|');
  return { label, dir: path.resolve(dir), nodeArgs: nodeOptions.split(' ').filter(Boolean), path: PATHS[Math.min(index, PATHS.length - 1)] };
});
if (variants.length < 2) {
  process.stderr.write('BENCH_AB must name at least two variants: label=dir[|node options],...\n');
  process.exit(1);
}

/** The JetStream client and manager of the nats path, connected before the variants start. */
let nats = null;
async function connectNats() {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstream, jetstreamManager } = await import('@nats-io/jetstream');
  const connection = await connect({ servers: NATS_URL, name: 'hookline-cpu-ab' });
  return { connection, js: jetstream(connection), manager: await jetstreamManager(connection) };
}

const children = new Set();
const temp = mkdtempSync(path.join(os.tmpdir(), 'hookline-cpu-ab-'));
process.on('exit', () => {
  for (const cp of children) killTree(cp, 'SIGKILL');
  rmSync(temp, { recursive: true, force: true });
});
const log = (line) => process.stderr.write(`[cpu-ab ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const pad = eventPadding(1024);
const headers = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };

async function start(variant) {
  const receiverPort = await freePort();
  const receiver = launch(process.execPath, [path.join(here, 'engine', 'receiver.mjs')], { extraEnv: { PORT: String(receiverPort), SAMPLE_EVERY: '0' }, children, detached: true });
  const receiverUrl = `http://127.0.0.1:${receiverPort}`;
  await waitFor('receiver up', () => request('GET', `${receiverUrl}/stats`), { timeoutMs: 10_000, child: receiver });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const suffix = Math.random().toString(36).slice(2, 10);
  const names = variant.path === 'nats' ? { stream: `HOOKLINE_CPU_AB_${variant.label}_${suffix}`, prefix: `hlcpuab.${suffix}.events`, durable: `hookline_cpu_ab_${suffix}` } : null;
  const natsEnv = names ? { HOOKLINE_NATS_URL: NATS_URL, HOOKLINE_NATS_STREAM: names.stream, HOOKLINE_NATS_SUBJECT_PREFIX: names.prefix, HOOKLINE_NATS_DURABLE: names.durable } : {};
  const entry = variant.dir.endsWith('.mjs') ? variant.dir : path.join(variant.dir, 'dist', 'cli', 'main.js');
  const node = launch(process.execPath, [...variant.nodeArgs, entry, 'serve'], {
    extraEnv: { ...serveEnv({ dataDir: path.join(temp, variant.label), port, apiKey: API_KEY }), ...natsEnv, ...(variant.path === 'batch' ? { HOOKLINE_RATE_LIMIT: '0' } : {}) },
    ...(LOG_DIR ? { logFile: path.join(path.resolve(LOG_DIR), `${variant.label}.log`) } : {}),
    children,
    detached: true,
  });
  await waitFor(`${variant.label} /healthz`, () => request('GET', `${url}/healthz`, { parse: 'auto' }), { timeoutMs: 60_000, child: node });
  await request('PUT', `${url}/v1/webhook`, { key: API_KEY, body: { callbackUrl: `${receiverUrl}/hook`, status: 'active', eventTypes: ['service.trigger.event'] } });
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  return { ...variant, names, receiver, receiverUrl, node, pool, sent: 0, perBurst: [], perSecond: [] };
}

const eventData = (seq) => `"data":{"sentAt":${nowMs().toFixed(3)},"seq":${seq},"pad":"${pad}"}`;

/** Events `seq`… to a variant, as many as one send takes (a POST, a batch POST, a JetStream publish awaiting its ack); returns how many. */
async function send(v, seq, left) {
  if (v.path === 'batch') {
    const count = Math.min(BATCH, left);
    const events = Array.from({ length: count }, (_, i) => `{"type":"service.trigger.event",${eventData(seq + i)}}`);
    const res = await v.pool.request({ method: 'POST', path: '/v1/events/batch', headers, body: `{"events":[${events.join(',')}]}` });
    await res.body.dump();
    if (res.statusCode !== 202) throw new Error(`${v.label}: batch ingest answered ${res.statusCode}`);
    return count;
  }
  const data = eventData(seq);
  if (v.names) {
    const id = `evt_${v.label}_${seq}`;
    await nats.js.publish(`${v.names.prefix}.default`, `{"id":"${id}","type":"service.trigger.event",${data}}`, { msgID: id });
    return 1;
  }
  const res = await v.pool.request({ method: 'POST', path: '/v1/events', headers, body: `{"type":"service.trigger.event",${data}}` });
  await res.body.dump();
  if (res.statusCode !== 202) throw new Error(`${v.label}: ingest answered ${res.statusCode}`);
  return 1;
}

/** BURST events to one variant, closed loop; resolves once its receiver has them all. */
async function burst(v, n) {
  const target = v.sent + n;
  let next = v.sent;
  const event = (seq) => `{"type":"service.trigger.event","data":{"sentAt":${nowMs().toFixed(3)},"seq":${seq},"pad":"${pad}"}}`;
  const worker = async () => {
    while (next < target) {
      const seq = next;
      next += Math.min(v.path === 'batch' ? BATCH : 1, target - seq);
      await send(v, seq, target - seq);
    }
  };
  await Promise.all(Array.from({ length: v.path === 'batch' ? BATCH_CONCURRENCY : CONCURRENCY }, worker));
  v.sent = target;
  await waitFor(`${v.label} deliveries`, async () => (await request('GET', `${v.receiverUrl}/stats`)).received >= target, { timeoutMs: 120_000, intervalMs: 10, child: v.node });
}

async function measured(v) {
  const before = cpuSeconds(v.node.pid);
  const t0 = performance.now();
  await burst(v, BURST);
  const ms = ((cpuSeconds(v.node.pid) - before) * 1000) / BURST;
  v.perBurst.push(ms);
  v.perSecond.push(BURST / ((performance.now() - t0) / 1000));
  return ms;
}

const running = [];
try {
  if (variants.some((v) => v.path === 'nats')) nats = await connectNats();
  for (const variant of variants) running.push(await start(variant));
  for (const v of running) await burst(v, WARMUP);
  log(`${running.map((v) => v.label).join(' / ')}: ${BURSTS} bursts of ${BURST}, load ${os.loadavg()[0].toFixed(2)}`);
  for (let round = 0; round < BURSTS; round++) {
    // Alternate which variant goes first, so that drift within a pair favours none.
    const order = round % 2 === 0 ? running : [...running].reverse();
    for (const v of order) await measured(v);
    log(`pair ${round + 1}: ${running.map((v) => `${v.label} ${v.perBurst.at(-1).toFixed(3)} ms ${Math.round(v.perSecond.at(-1))}/s`).join(', ')}; load ${os.loadavg()[0].toFixed(2)}`);
    await sleep(50);
  }
  const median = (values) => quantile([...values].sort((a, b) => a - b), 0.5);
  const mean = (values) => values.reduce((sum, x) => sum + x, 0) / values.length;
  const first = running[0];
  const report = running.map((v) => ({
    label: v.label,
    path: v.path,
    median_per_s: Math.round(median(v.perSecond)),
    per_s_ratio_to_first_median: Number(median(v.perSecond.map((perS, i) => perS / first.perSecond[i])).toFixed(4)),
    median_ms: Number(median(v.perBurst).toFixed(4)),
    mean_ms: Number(mean(v.perBurst).toFixed(4)),
    ratio_to_first_median: Number(median(v.perBurst.map((ms, i) => ms / first.perBurst[i])).toFixed(4)),
    pairs_below_first: v.perBurst.filter((ms, i) => ms < first.perBurst[i]).length,
    peak_rss_mb: Math.round(procMemory(v.node.pid).hwmMb),
  }));
  process.stdout.write(`${JSON.stringify({ bench: 'cpu-ab', bursts: BURSTS, burst: BURST, batch: BATCH, concurrency: CONCURRENCY, load_average: os.loadavg().map((x) => Number(x.toFixed(2))), variants: report })}\n`);
} finally {
  for (const v of running) {
    await v.pool.close();
    await stopChild(v.node, { group: true });
    await stopChild(v.receiver, { group: true });
    if (v.names) await nats.manager.streams.delete(v.names.stream).catch(() => false);
  }
  await nats?.connection.close();
}
