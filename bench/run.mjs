// Delivery-engine bench (`npm run bench`): Hookline against the peers of ../shared/bench/peers, in one
// run, every party in a process of its own, all traffic on 127.0.0.1. It builds nothing: it runs the
// compiled `dist/` (run `npx tsc -p tsconfig.build.json` first).
//
// Scenarios
//   1. Throughput, BENCH_ROUNDS rounds, the three contenders interleaved within each round:
//      - hookline: `node dist/cli/main.js serve` (fresh LMDB dir, embedded transport), a 204 receiver
//        (bench/engine/receiver.mjs) and a load generator (bench/engine/loadgen.mjs) that POSTs
//        BENCH_N events of ~1 KB to /v1/events with BENCH_CONCURRENCY in flight. Figure: BENCH_N /
//        (last receipt - first ingest POST).
//      - bullmq: the bullmq-dispatcher peer's bench.mjs with the same N (defaults otherwise). Its figure
//        is defined the same way (first enqueue -> last receipt).
//      - ceiling: the http-ceiling peer's run.sh with SIGN=1, CONCURRENCY=64: signed POSTs, no engine.
//      - floor (unless BENCH_SKIP has floor): bench/engine/floor.mjs in place of Hookline, one event per
//        POST and batch, the same load: the least any Node process does per event to keep the contract
//        (served, put to LMDB and on disk before the 202, sent signed, the outcome put). Its CPU per
//        delivery against the ceiling sender's is what no implementation in Node can take back; Hookline's
//        against the floor's is what Hookline's own work costs.
//      - hookline batch (unless BENCH_SKIP has batch): the same node and receiver, the load generator
//        sending BENCH_BATCH (100) events per POST /v1/events/batch with BENCH_BATCH_CONCURRENCY (8)
//        requests in flight; HOOKLINE_RATE_LIMIT=0 (the default 20,000 events/s would be the figure).
//      Reported: the median over rounds, and each round.
//      - bullmq durable (when BENCH_DURABLE_REDIS_PORT is set): the same peer against a Redis with
//        appendonly yes / appendfsync always (started by you, see the peer's README); reported beside
//        the plain one, which uses the shared Redis at BENCH_REDIS_HOST:BENCH_REDIS_PORT.
//      The ceiling's sender CPU (utime+stime from /proc, run.sh's steps done here so the sender's pid
//      is known) per request is reported beside Hookline's serve-process CPU per delivery.
//   2. Latency at a fixed BENCH_RATE (1,000/s) for BENCH_RATE_SECONDS (10): ingest POST -> receipt,
//      p50/p99, for hookline (open-loop load generator) and the bullmq peer (RATE=1000); then hookline
//      again at BENCH_RATE_HIGH (5,000/s, 0 = skip) on a fresh node.
//   3. Retrying: hookline with HOOKLINE_RETRY_SCHEDULE=0,1h and a receiver answering 500; BENCH_RETRYING
//      events; once every delivery has had its first attempt (`hookline_delivery_attempts_total`, all
//      outcomes, reaches that; the circuit breaker fails most unsent) and none is due, VmRSS of the serve process 1 s later (what
//      the burst left) and BENCH_RETRYING_SETTLE s later (the figure: the node at rest, once it has given
//      back what the burst grew, src/idle-memory-release.ts). Then SIGTERM,
//      start again on the same LMDB dir, and time spawn -> GET /metrics shows every delivery live.
//
// Env (defaults in brackets):
//   BENCH_N [50000]             events per throughput round (the bullmq peer gets the same N)
//   BENCH_ROUNDS [3]            throughput rounds; the table shows the median
//   BENCH_CONCURRENCY [64]      POSTs in flight from the load generator
//   BENCH_RATE [1000]           events/s of the latency runs, for BENCH_RATE_SECONDS [10]
//   BENCH_WARMUP [2000]         events sent at BENCH_RATE before the hookline latency run, not measured
//                               (the peers' scripts have no warm-up; the throughput runs have none)
//   BENCH_RETRYING [100000]     deliveries parked in `retrying` for the RSS and restart figures
//   BENCH_RETRYING_SETTLE [5]   seconds from the last one scheduled to the memory figure
//   BENCH_CEILING_SECONDS [10]  duration of each http-ceiling run
//   BENCH_BATCH [100]           events per request of the batch-ingest rounds
//   BENCH_BATCH_CONCURRENCY [8] batch requests in flight
//   BENCH_RATE_HIGH [5000]      events/s of the second hookline latency run (0 = skip it)
//   BENCH_REDIS_HOST [127.0.0.1], BENCH_REDIS_PORT [6379]   the Redis of the plain bullmq peer runs
//   BENCH_DURABLE_REDIS_PORT    a durable Redis (appendfsync always) on BENCH_REDIS_HOST: also run the
//                               bullmq peer against it each round (unset: not run)
//   BENCH_SKIP                  comma list of: bullmq, ceiling, floor, batch, latency, retrying, single (the
//                               one-event-per-POST hookline rounds; e.g. to profile the batch rounds alone)
//   BENCH_PEERS_DIR             [../shared/bench/peers]; a peer without node_modules is copied to
//                               bench/.bench/peers/ (git-ignored) and installed there once
//   BENCH_QUIET_WAIT [90]       before each phase, wait up to this many seconds for the machine to be
//                               under BENCH_QUIET_BUSY [25] % busy (a shared machine); 0 = don't wait
//   BENCH_KEEP=1                keep temp dirs and logs; BENCH_VERBOSE=1 echoes the peers' output
//   BENCH_PROFILE_DIR           run every serve process with --cpu-prof, profiles into that dir
//   BENCH_PERF_DIR              record each throughput round's serve process with `perf record` (CPU
//                               time, the kernel included; JS named through --perf-basic-prof) into
//                               that dir, and sum it with bench/engine/perf-summary.mjs (needs
//                               perf: Debian's linux-perf). Read its shares: a recorded round costs
//                               more CPU per delivery than one that is not
//   BENCH_ALLOC_PROFILE_DIR     sample every serve process's allocations, collected objects included,
//                               into that dir (bench/engine/allocation-summary.mjs sums them per delivery)
//   BENCH_STRICT=1              exit 2 when a target is missed (default: exit 0 once it ran)
//   BENCH_SERVE_NODE            the node binary of the Hookline serve processes (default: the one
//                               running the bench, which the peers, load generators and receivers use),
//                               to tell one Node version's share of a figure from the bench's own
// HOOKLINE_* variables in the environment reach the serve processes; the bench sets the data dir,
// port, host, API key and HOOKLINE_ALLOW_PRIVATE_NETWORKS=1 itself.
// Smoke run: BENCH_N=2000 BENCH_ROUNDS=1 BENCH_RATE_SECONDS=2 BENCH_RETRYING=2000 BENCH_CEILING_SECONDS=2 npm run bench
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PERF_NODE_ARGS, cpuSeconds, dirSizeMb, freePort, jsonReport, killTree, launch as launchChild, machineCpu, metricSum, metricValue, nowMs, num, procMemory, request, serveEnv, sleep, startPerfRecording, stopChild, waitFor } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const N = num('BENCH_N', 50_000);
const ROUNDS = num('BENCH_ROUNDS', 3);
const CONCURRENCY = num('BENCH_CONCURRENCY', 64);
const BATCH = num('BENCH_BATCH', 100);
const BATCH_CONCURRENCY = num('BENCH_BATCH_CONCURRENCY', 8);
const RATE = num('BENCH_RATE', 1000);
const RATE_SECONDS = num('BENCH_RATE_SECONDS', 10);
const RATE_HIGH = num('BENCH_RATE_HIGH', 5000);
const RETRYING = num('BENCH_RETRYING', 100_000);
const RETRYING_SETTLE_S = num('BENCH_RETRYING_SETTLE', 5);
const WARMUP = num('BENCH_WARMUP', 2000);
const CEILING_SECONDS = num('BENCH_CEILING_SECONDS', 10);
const SKIP = new Set((env.BENCH_SKIP ?? '').split(',').map((s) => s.trim()).filter(Boolean));
const PEERS_DIR = path.resolve(env.BENCH_PEERS_DIR ?? path.join(root, '..', 'shared', 'bench', 'peers'));
const KEEP = env.BENCH_KEEP === '1';
const QUIET_WAIT_S = num('BENCH_QUIET_WAIT', 90);
const QUIET_BUSY_PCT = num('BENCH_QUIET_BUSY', 25);
const API_KEY = 'hk_bench_' + Math.random().toString(36).slice(2);
const REDIS = { host: env.BENCH_REDIS_HOST || '127.0.0.1', port: num('BENCH_REDIS_PORT', 6379) };
const DURABLE_REDIS = env.BENCH_DURABLE_REDIS_PORT ? { host: REDIS.host, port: num('BENCH_DURABLE_REDIS_PORT', 6390) } : null;

// Issue 12's targets (the earlier ones, 3x BullMQ, 0.5x ceiling, 200 MB RSS, 3 s restart of 100,000,
// are reported as plain figures).
const TARGETS = {
  ratioBullmq: 2, // embedded, one event per POST: deliveries/s >= 2x bullmq peer
  cpuRatioCeiling: 3, // Hookline CPU per delivery <= 3x the ceiling sender's CPU per request
  p99Ms: 10, // p99 ingest->receipt at 1,000/s
  anonMb: 120, // RssAnon with 100,000 retrying
  batchRatioBullmq: 4, // batch ingest (BENCH_BATCH per request) deliveries/s >= 4x bullmq peer
  batchRatioCeiling: 0.4, // and >= 0.4x the signed-POST ceiling
};

const log = (...parts) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

// Preconditions --------------------------------------------------------------------------------

const SERVE_JS = path.join(root, 'dist', 'cli', 'main.js');
const FLOOR_JS = path.join(here, 'engine', 'floor.mjs');
for (const needed of [SERVE_JS, path.join(root, 'dist', 'sdk', 'index.js')]) {
  if (!existsSync(needed)) {
    process.stderr.write(`bench: ${path.relative(root, needed)} is missing; this bench runs the compiled code and builds nothing.\n` +
      `Build first: npx tsc -p tsconfig.build.json   (or npm run build)\n`);
    process.exit(1);
  }
}

// Children and temp dirs: every one is registered and torn down on any exit --------------------

const children = new Set();
const tempDirs = new Set();
let cleaned = false;

function cleanupSync() {
  if (cleaned) return;
  cleaned = true;
  for (const cp of children) killTree(cp, 'SIGKILL');
  if (!KEEP) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  else if (tempDirs.size) process.stderr.write(`bench: kept ${[...tempDirs].join(' ')}\n`);
}
process.on('exit', cleanupSync);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    process.stderr.write(`bench: ${signal}, cleaning up\n`);
    cleanupSync();
    process.exit(130);
  });
}

function tempDir(label) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-bench-${label}-`));
  tempDirs.add(dir);
  return dir;
}

/** Spawns a child in its own process group; stdout/stderr go to `logFile` (or are collected when null). */
function launch(command, args, { cwd = root, extraEnv = {}, logFile = null } = {}) {
  return launchChild(command, args, { cwd, extraEnv, logFile, children, detached: true, echoStderr: !!env.BENCH_VERBOSE });
}

/** GET/POST/PUT with the shared request helper, answers parsed by content-type (JSON or text). */
const http = (method, url, options = {}) => request(method, url, { ...options, parse: 'auto' });

/** utime + stime of a process in seconds, and its VmRSS / VmHWM in MB (Linux /proc). */
function procStats(pid) {
  return { cpuS: cpuSeconds(pid), ...procMemory(pid) };
}

/**
 * On a shared machine, waits (at most QUIET_WAIT_S) until the cores have been below QUIET_BUSY_PCT busy
 * for a 2 s window, so a phase does not start in the middle of somebody else's build. Returns the wait.
 */
async function waitQuiet(label) {
  if (!(QUIET_WAIT_S > 0)) return 0;
  const t0 = performance.now();
  let busy = NaN;
  while ((performance.now() - t0) / 1000 < QUIET_WAIT_S) {
    const a = machineCpu();
    await sleep(2000);
    const b = machineCpu();
    busy = (100 * (b.busy - a.busy)) / (b.total - a.total);
    if (busy < QUIET_BUSY_PCT) return (performance.now() - t0) / 1000;
  }
  log(`  ${label}: machine still ${busy.toFixed(0)}% busy after waiting ${QUIET_WAIT_S}s; measuring anyway`);
  return (performance.now() - t0) / 1000;
}

/** utime+stime+cutime+cstime of a process in jiffies: with `self`, this bench plus every reaped descendant. */
function treeJiffies(pid = 'self') {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return f[11] + f[12] + f[13] + f[14];
  } catch {
    return 0;
  }
}

let redisPids;
/** The local redis-servers' pids (the BullMQ peer's work partly runs there), found once by name in /proc. */
function findRedisPids() {
  if (redisPids !== undefined) return redisPids;
  redisPids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'redis-server') redisPids.push(entry);
    } catch { /* gone */ }
  }
  return redisPids;
}
const redisJiffies = () => findRedisPids().reduce((sum, pid) => sum + treeJiffies(pid), 0);

/** Rss (MB) of the mappings of files under `dir` (the LMDB map), from /proc/<pid>/smaps. */
function mappedRssMb(pid, dir) {
  try {
    let kb = 0;
    let inside = false;
    for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (header) { inside = header[1].startsWith(dir + path.sep); continue; }
      if (inside && line.startsWith('Rss:')) kb += Number(/(\d+)/.exec(line)[1]);
    }
    return kb / 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * Runs `fn` and adds how busy the machine was meanwhile: `machineBusyPct` (all cores, anyone's work)
 * and `otherCores`, the cores used by processes that are neither this bench's children nor redis.
 * Every child of a phase has exited (and been reaped) when `fn` resolves, so its CPU is in cutime.
 */
async function withMachineLoad(fn, label = 'phase') {
  await waitQuiet(label);
  const a = machineCpu();
  const oursA = treeJiffies() + redisJiffies();
  const t0 = performance.now();
  const result = await fn();
  const wallS = (performance.now() - t0) / 1000;
  const b = machineCpu();
  const oursB = treeJiffies() + redisJiffies();
  return Object.assign(result, {
    machineBusyPct: (100 * (b.busy - a.busy)) / (b.total - a.total),
    benchCores: (oursB - oursA) / 100 / wallS,
    otherCores: Math.max(0, (b.busy - a.busy - (oursB - oursA)) / 100 / wallS),
  });
}

// Hookline node, receiver, load generator ------------------------------------------------------

async function startReceiver(dir, { status = 204 } = {}) {
  const port = await freePort();
  const cp = launch(process.execPath, [path.join(here, 'engine', 'receiver.mjs')], { extraEnv: { PORT: String(port), STATUS: String(status) }, logFile: path.join(dir, `receiver-${port}.log`) });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('receiver up', () => http('GET', `${url}/stats`), { timeoutMs: 10_000, child: cp });
  return { cp, url, port, stats: () => http('GET', `${url}/stats`) };
}

async function startHookline(dir, { dataDir, port, extraEnv = {}, logName = 'hookline.log', entry = SERVE_JS }) {
  const url = `http://127.0.0.1:${port}`;
  const spawnAt = nowMs();
  const profile = env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE_DIR)}`] : [];
  const perfMap = env.BENCH_PERF_DIR ? PERF_NODE_ARGS : [];
  const allocations = env.BENCH_ALLOC_PROFILE_DIR ? ['--import', pathToFileURL(path.join(here, 'engine', 'allocation-sampler.mjs')).href] : [];
  const cp = launch(env.BENCH_SERVE_NODE || process.execPath, [...profile, ...perfMap, ...allocations, entry, 'serve'], {
    extraEnv: {
      ...serveEnv({ dataDir, port, apiKey: API_KEY }),
      ...(env.BENCH_ALLOC_PROFILE_DIR ? { BENCH_ALLOC_PROFILE_DIR: path.resolve(env.BENCH_ALLOC_PROFILE_DIR) } : {}),
      ...extraEnv,
    },
    logFile: path.join(dir, logName),
  });
  cp.spawnAt = spawnAt;
  cp.url = url;
  cp.logFile = path.join(dir, logName);
  await waitFor('hookline /healthz', () => http('GET', `${url}/healthz`, { timeoutMs: 2000 }), { timeoutMs: 120_000, intervalMs: 20, child: cp }).catch((error) => {
    throw new Error(`${error.message}\n--- ${cp.logFile} (tail) ---\n${tail(cp.logFile)}`);
  });
  cp.readyAt = nowMs();
  return cp;
}

function tail(file, bytes = 2000) {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '(no log)';
  }
}

async function configureWebhook(node, receiver) {
  await http('PUT', `${node.url}/v1/webhook`, { key: API_KEY, body: { callbackUrl: `${receiver.url}/hook`, status: 'active', eventTypes: ['service.trigger.event'] } });
  const { secret } = await http('GET', `${node.url}/v1/webhook/secret`, { key: API_KEY });
  await http('POST', `${receiver.url}/secret`, { body: { secret } });
}

async function runLoadgen(dir, node, { n, rate = 0, concurrency = CONCURRENCY, batch = 1 }) {
  const cp = launch(process.execPath, [path.join(here, 'engine', 'loadgen.mjs')], {
    extraEnv: { TARGET: node.url, API_KEY, N: String(n), RATE: String(rate), CONCURRENCY: String(concurrency), BATCH: String(batch) },
  });
  const report = await jsonReport(cp, 'loadgen');
  if (report.errors > 0) log(`loadgen: ${report.errors} ingest errors ${JSON.stringify(report.statuses)} ${cp.output().slice(0, 400)}`);
  return report;
}

async function waitDelivered(receiver, n, node, { timeoutMs }) {
  let last = 0;
  let lastChange = Date.now();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await receiver.stats();
    if (s.received >= n) return s;
    if (s.received !== last) { last = s.received; lastChange = Date.now(); }
    if (node && (node.exitCode !== null || node.signalCode !== null)) throw new Error(`hookline exited while delivering (${s.received}/${n})\n${tail(node.logFile)}`);
    if (Date.now() > deadline || Date.now() - lastChange > 30_000) {
      log(`timeout: only ${s.received}/${n} delivered`);
      return { ...s, timedOut: true };
    }
    await sleep(50);
  }
}

/** One throughput round; `batch` > 1 sends that many events per POST /v1/events/batch; `entry` = FLOOR_JS runs the floor. */
async function hooklineThroughput(round, { batch = 1, entry = SERVE_JS } = {}) {
  const dir = tempDir(`${entry === FLOOR_JS ? 'floor-' : ''}${batch > 1 ? 'batch' : 'tput'}${round}`);
  const receiver = await startReceiver(dir);
  const extraEnv = batch > 1 ? { HOOKLINE_RATE_LIMIT: '0' } : {};
  const node = await startHookline(dir, { dataDir: path.join(dir, 'data'), port: await freePort(), extraEnv, entry });
  try {
    await configureWebhook(node, receiver);
    await http('POST', `${receiver.url}/reset`);
    const before = procStats(node.pid);
    const recording = env.BENCH_PERF_DIR ? startPerfRecording(node.pid, path.resolve(env.BENCH_PERF_DIR), `${entry === FLOOR_JS ? 'floor-' : ''}${batch > 1 ? 'batch' : 'tput'}${round}`) : null;
    const t0 = performance.now();
    const ingest = await runLoadgen(dir, node, batch > 1 ? { n: N, batch, concurrency: BATCH_CONCURRENCY } : { n: N });
    const s = await waitDelivered(receiver, N, node, { timeoutMs: Math.max(120_000, N * 2) });
    const wallS = (performance.now() - t0) / 1000;
    const after = procStats(node.pid);
    if (recording) log(await recording.stop());
    const secs = (s.last_at - ingest.first_send_at) / 1000;
    return {
      perS: Math.round(s.received / secs),
      received: s.received,
      seconds: secs,
      ingestPerS: ingest.ingest_per_s,
      ackP50: ingest.ack_p50_ms,
      ackP99: ingest.ack_p99_ms,
      deliveredBytes: s.received ? Math.round(s.bytes / s.received) : 0,
      ingestBytes: ingest.body_bytes,
      duplicates: s.duplicates,
      verified: s.verified,
      badSignatures: s.bad_signatures,
      cpuCores: (after.cpuS - before.cpuS) / wallS,
      cpuMsPerDelivery: ((after.cpuS - before.cpuS) * 1000) / Math.max(1, s.received),
      hwmMb: after.hwmMb,
      timedOut: !!s.timedOut,
    };
  } finally {
    await stopChild(node, { group: true });
    await stopChild(receiver.cp, { group: true });
  }
}

async function hooklineLatency(rate = RATE) {
  const dir = tempDir(`latency${rate}`);
  const receiver = await startReceiver(dir);
  const node = await startHookline(dir, { dataDir: path.join(dir, 'data'), port: await freePort() });
  try {
    await configureWebhook(node, receiver);
    if (WARMUP > 0) {
      // Same path, same rate, then forget it: JIT, LMDB's first pages and the receiver's connections.
      await runLoadgen(dir, node, { n: WARMUP, rate });
      await waitDelivered(receiver, WARMUP, node, { timeoutMs: 120_000 });
    }
    await http('POST', `${receiver.url}/reset`);
    const n = Math.round(rate * RATE_SECONDS);
    const ingest = await runLoadgen(dir, node, { n, rate });
    const s = await waitDelivered(receiver, n, node, { timeoutMs: 120_000 });
    return { rate, n, received: s.received, p50: s.p50_ms, p90: s.p90_ms, p99: s.p99_ms, max: s.max_ms, ackP50: ingest.ack_p50_ms, ackP99: ingest.ack_p99_ms, achievedRate: ingest.ingest_per_s, badSignatures: s.bad_signatures, verified: s.verified };
  } finally {
    await stopChild(node, { group: true });
    await stopChild(receiver.cp, { group: true });
  }
}

async function hooklineRetrying() {
  const dir = tempDir('retrying');
  const dataDir = path.join(dir, 'data');
  const retryEnv = { HOOKLINE_RETRY_SCHEDULE: '0,1h' };
  const receiver = await startReceiver(dir, { status: 500 });
  let node = await startHookline(dir, { dataDir, port: await freePort(), extraEnv: retryEnv, logName: 'hookline-1.log' });
  const result = { n: RETRYING };
  try {
    await configureWebhook(node, receiver);
    result.idle = procStats(node.pid);
    const t0 = performance.now();
    const ingest = await runLoadgen(dir, node, { n: RETRYING });
    result.ingestPerS = ingest.ingest_per_s;
    result.ingestErrors = ingest.errors;
    const metrics = () => http('GET', `${node.url}/metrics`);
    let m = '';
    // Every delivery has had its first attempt (sent, or failed unsent once the circuit opened) and
    // none is due: since issue 35 a retry an hour away waits on disk, not in the scheduler's heap.
    await waitFor('every delivery retrying', async () => {
      m = await metrics();
      return metricSum(m, 'hookline_delivery_attempts_total') >= RETRYING && metricValue(m, 'hookline_ready_queue_depth') === 0;
    }, { timeoutMs: Math.max(120_000, RETRYING * 3), intervalMs: 250, child: node });
    result.toRetryingS = (performance.now() - t0) / 1000;
    await sleep(1000); // let the last commits settle
    result.afterBurst = procMemory(node.pid);
    await sleep(Math.max(0, RETRYING_SETTLE_S - 1) * 1000);
    m = await metrics();
    const p = procStats(node.pid);
    result.rssMb = p.rssMb;
    result.hwmMb = p.hwmMb;
    result.anonMb = p.anonMb;
    result.fileMb = p.fileMb;
    result.lmdbMappedMb = mappedRssMb(node.pid, dataDir);
    result.live = metricValue(m, 'hookline_live_deliveries');
    result.dataMb = dirSizeMb(dataDir);
    result.scheduled = metricValue(m, 'hookline_scheduled_retries');
    result.attemptsSeen = (await receiver.stats()).received;

    // Restart on the same data dir.
    const port = node.url.split(':').pop();
    const stopT0 = performance.now();
    await stopChild(node, { timeoutMs: 60_000, group: true });
    result.stopS = (performance.now() - stopT0) / 1000;
    result.stopExit = node.exitCode;
    node = await startHookline(dir, { dataDir, port: Number(port), extraEnv: retryEnv, logName: 'hookline-2.log' });
    // /healthz answers only after the engine resumed (Engine.start runs before listen); confirm with metrics.
    const live = await waitFor('resumed', async () => {
      const text = await http('GET', `${node.url}/metrics`, { timeoutMs: 5000 });
      const value = metricValue(text, 'hookline_waiting_deliveries');
      return value >= RETRYING ? value : 0;
    }, { timeoutMs: 120_000, intervalMs: 10, child: node });
    result.restartS = (nowMs() - node.spawnAt) / 1000;
    result.liveAfter = live;
    const resumedLine = readFileSync(node.logFile, 'utf8').split('\n').find((l) => l.includes('resumed waiting deliveries from LMDB'));
    if (resumedLine) {
      const entry = JSON.parse(resumedLine);
      result.resumedLogS = (entry.time - node.spawnAt) / 1000;
      result.resumedLogged = entry.waiting;
    }
    result.after = procStats(node.pid);
    result.after.lmdbMappedMb = mappedRssMb(node.pid, dataDir);
    result.rssAfterMb = result.after.rssMb;
    return result;
  } finally {
    await stopChild(node, { group: true });
    await stopChild(receiver.cp, { group: true });
  }
}

// Peers ----------------------------------------------------------------------------------------

/** A runnable copy of a peer: in place when its node_modules is there, else a cached copy in bench/.bench/peers. */
function preparePeer(name, probe) {
  const source = path.join(PEERS_DIR, name);
  if (!existsSync(source)) throw new Error(`peer ${name} not found at ${source} (set BENCH_PEERS_DIR)`);
  if (existsSync(path.join(source, 'node_modules', probe))) return source;
  const copy = path.join(here, '.bench', 'peers', name);
  const lock = readFileSync(path.join(source, 'package-lock.json'), 'utf8');
  const stamp = path.join(copy, '.installed-from-lock');
  if (existsSync(path.join(copy, 'node_modules', probe)) && existsSync(stamp) && readFileSync(stamp, 'utf8') === lock) return copy;
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(path.dirname(copy), { recursive: true });
  cpSync(source, copy, { recursive: true, filter: (src) => !src.includes(`${path.sep}node_modules`) });
  execFileSync('chmod', ['-R', 'u+w', copy]);
  log(`installing peer ${name} into ${path.relative(root, copy)}`);
  try {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: copy, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    // The shared lock file can lack optional per-platform entries, which `npm ci` refuses; `npm install`
    // keeps every version the lock pins and only adds the missing optional entries.
    log(`npm ci failed in ${name} (${String(error.stderr).split('\n').find((l) => l.includes('error') && !l.endsWith('error')) ?? 'see npm log'}); using npm install`);
    execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: copy, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  writeFileSync(stamp, lock);
  return copy;
}

async function redisUp(redis = REDIS) {
  return (await redisInfo(redis, 'PING')).startsWith('+PONG');
}

/** One inline command to a Redis, its raw answer ('' on failure). */
function redisInfo(redis, command) {
  return new Promise((resolve) => {
    const socket = net.connect(redis.port, redis.host);
    socket.setTimeout(1000);
    socket.once('connect', () => { socket.write(`${command}\r\n`); });
    socket.once('data', (d) => { socket.destroy(); resolve(String(d)); });
    socket.once('error', () => resolve(''));
    socket.once('timeout', () => { socket.destroy(); resolve(''); });
  });
}

async function runPeer(cwd, command, args, extraEnv, pattern) {
  const cp = launch(command, args, { cwd, extraEnv });
  const { code } = await cp.exited;
  const out = cp.output();
  const match = pattern.exec(out);
  if (!match) throw new Error(`${path.basename(cwd)} ${args.join(' ')} gave no result (exit ${code}):\n${out.slice(-1500)}`);
  return { out, match };
}

async function bullmqRun(dir, { n, rate = 0, redis = REDIS }) {
  const { out, match } = await runPeer(dir, process.execPath, ['bench.mjs', String(n)], {
    PORT: String(await freePort()), QUEUE: 'hookline-bench-peer', RATE: String(rate), REDIS_HOST: redis.host, REDIS_PORT: String(redis.port),
  }, /deliveries_per_s=(\d+) p50_ms=([\d.]+) p99_ms=([\d.]+)/);
  const received = Number(/received=(\d+)/.exec(out)?.[1] ?? NaN);
  return { perS: Number(match[1]), p50: Number(match[2]), p99: Number(match[3]), received, timedOut: /TIMEOUT/.test(out), badSignatures: Number(/bad_signatures=(\d+)/.exec(out)?.[1] ?? 0) };
}

/**
 * The http-ceiling peer, run.sh's steps done here (receiver in its own process, then sender.mjs with
 * CONCURRENCY=64 SIGN=1) so that the sender's CPU can be read: a shell runs the sender, reaps it and
 * prints its own /proc/<pid>/stat, whose cutime+cstime are the sender's utime+stime (whole process,
 * start-up and the 1 s warm-up included). CPU per request divides that by requests_per_s x (WARMUP 1 s +
 * DURATION), the sender sending at full rate in its warm-up too.
 */
async function ceilingRun(dir) {
  const port = await freePort();
  const extraEnv = { CONCURRENCY: '64', DURATION: String(CEILING_SECONDS), SIGN: '1', PORT: String(port), URL: `http://127.0.0.1:${port}/hook` };
  const receiver = launch(process.execPath, ['receiver.mjs'], { cwd: dir, extraEnv });
  try {
    await waitFor('ceiling receiver up', () => new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    }), { timeoutMs: 10_000, intervalMs: 100, child: receiver });
    const receiverCpu0 = cpuSeconds(receiver.pid);
    const { out, match } = await runPeer(dir, 'bash', ['-c', `"${process.execPath}" sender.mjs; echo "shell_stat=$(cat /proc/$$/stat)"`], extraEnv,
      /requests_per_s=(\d+) p50_ms=([\d.]+) p99_ms=([\d.]+) errors=(\d+)/);
    const receiverCpuS = cpuSeconds(receiver.pid) - receiverCpu0;
    const stat = /shell_stat=(.*)/.exec(out)?.[1] ?? '';
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    const senderCpuS = (f[13] + f[14]) / 100; // cutime + cstime of the shell: the reaped sender
    const perS = Number(match[1]);
    const requests = perS * (CEILING_SECONDS + 1);
    return { perS, p50: Number(match[2]), p99: Number(match[3]), errors: Number(match[4]), senderCpuS, senderCpuMsPerRequest: (senderCpuS * 1000) / requests, receiverCpuMsPerRequest: (receiverCpuS * 1000) / requests };
  } finally {
    await stopChild(receiver, { group: true });
  }
}

// Main -----------------------------------------------------------------------------------------

const median = (values) => {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a');

function gitDescribe() {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).trim() ? '+dirty src' : '';
    return sha + (dirty ? ` (${dirty})` : '');
  } catch {
    return 'unknown';
  }
}

async function main() {
  const startedAt = new Date();
  const cpus = os.cpus();
  const machine = `${cpus.length} cores (${cpus[0]?.model.trim()}), ${os.platform()} ${os.arch()}, ${Math.round(os.totalmem() / 2 ** 30)} GB, Node ${process.version}${env.BENCH_SERVE_NODE ? ` (Hookline on ${execFileSync(env.BENCH_SERVE_NODE, ['--version'], { encoding: 'utf8' }).trim()})` : ''}`;
  const hooklineEnv = Object.entries(env).filter(([k]) => k.startsWith('HOOKLINE_')).map(([k, v]) => `${k}=${v}`).join(' ') || '(none)';
  log(`engine bench: N=${N} rounds=${ROUNDS} concurrency=${CONCURRENCY} rate=${RATE}/s x ${RATE_SECONDS}s retrying=${RETRYING}`);
  log(`machine: ${machine}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; commit ${gitDescribe()}; HOOKLINE_* from env: ${hooklineEnv}`);
  const loadStart = os.loadavg();
  if (loadStart[0] > 1) log(`warning: 1-minute load average is ${loadStart[0].toFixed(2)} before the bench starts; other work on this ${cpus.length}-core machine will skew every figure`);

  let bullmqDir = null;
  let ceilingDir = null;
  const notes = [];
  if (!SKIP.has('bullmq')) {
    if (!(await redisUp())) notes.push(`bullmq peer skipped: no Redis at ${REDIS.host}:${REDIS.port}`);
    else bullmqDir = preparePeer('bullmq-dispatcher', 'bullmq');
    if (DURABLE_REDIS && !(await redisUp(DURABLE_REDIS))) {
      notes.push(`durable bullmq peer skipped: no Redis at ${DURABLE_REDIS.host}:${DURABLE_REDIS.port}`);
    } else if (DURABLE_REDIS) {
      bullmqDir ??= preparePeer('bullmq-dispatcher', 'bullmq');
      const info = await redisInfo(DURABLE_REDIS, 'CONFIG GET appendfsync');
      log(`durable redis ${DURABLE_REDIS.host}:${DURABLE_REDIS.port}: ${info.replace(/\r\n/g, ' ').trim()}`);
      if (!/always/.test(info)) notes.push(`the "durable" Redis at ${DURABLE_REDIS.port} does not report appendfsync always: ${info.replace(/\r\n/g, ' ')}`);
    }
  }
  if (!SKIP.has('ceiling')) ceilingDir = preparePeer('http-ceiling', 'undici');

  const rounds = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const round = {};
    if (!SKIP.has('single')) {
      log(`round ${r}/${ROUNDS}: hookline throughput, ${N} events`);
      round.hookline = await withMachineLoad(() => hooklineThroughput(r));
      log(`  hookline ${fmt(round.hookline.perS)}/s (ingest ${fmt(round.hookline.ingestPerS)}/s, ${round.hookline.cpuCores.toFixed(2)} cores)`);
    }
    if (!SKIP.has('batch')) {
      log(`round ${r}/${ROUNDS}: hookline batch ingest, ${N} events, ${BATCH} per request`);
      round.batch = await withMachineLoad(() => hooklineThroughput(r, { batch: BATCH }));
      log(`  hookline batch ${fmt(round.batch.perS)}/s (ingest ${fmt(round.batch.ingestPerS)}/s, ${round.batch.cpuCores.toFixed(2)} cores)`);
    }
    if (!SKIP.has('floor')) {
      // The floor meets the loads Hookline met in this round.
      log(`round ${r}/${ROUNDS}: the contract's floor (bench/engine/floor.mjs), ${N} events`);
      if (!SKIP.has('single')) round.floor = await withMachineLoad(() => hooklineThroughput(r, { entry: FLOOR_JS }));
      if (!SKIP.has('batch')) round.floorBatch = await withMachineLoad(() => hooklineThroughput(r, { entry: FLOOR_JS, batch: BATCH }));
      log(`  floor: one per POST ${fmt(round.floor?.perS)}/s at ${fmt(round.floor?.cpuMsPerDelivery, 3)} CPU ms per delivery; batch ${fmt(round.floorBatch?.perS)}/s at ${fmt(round.floorBatch?.cpuMsPerDelivery, 3)}`);
    }
    if (bullmqDir) {
      log(`round ${r}/${ROUNDS}: bullmq peer, ${N} jobs`);
      round.bullmq = await withMachineLoad(() => bullmqRun(bullmqDir, { n: N }));
      log(`  bullmq ${fmt(round.bullmq.perS)}/s`);
    }
    if (bullmqDir && DURABLE_REDIS && !notes.some((n) => n.startsWith('durable bullmq peer skipped'))) {
      log(`round ${r}/${ROUNDS}: bullmq peer, durable Redis :${DURABLE_REDIS.port}, ${N} jobs`);
      round.bullmqDurable = await withMachineLoad(() => bullmqRun(bullmqDir, { n: N, redis: DURABLE_REDIS }));
      log(`  bullmq durable ${fmt(round.bullmqDurable.perS)}/s`);
    }
    if (ceilingDir) {
      log(`round ${r}/${ROUNDS}: http ceiling, SIGN=1 CONCURRENCY=64 ${CEILING_SECONDS}s`);
      round.ceiling = await withMachineLoad(() => ceilingRun(ceilingDir));
      log(`  ceiling ${fmt(round.ceiling.perS)}/s, sender ${fmt(round.ceiling.senderCpuMsPerRequest, 3)} CPU ms per request`);
    }
    rounds.push(round);
  }

  let latency = null;
  let bullmqLatency = null;
  let latencyHigh = null;
  if (!SKIP.has('latency')) {
    log(`latency: hookline at ${RATE}/s for ${RATE_SECONDS}s`);
    latency = await withMachineLoad(() => hooklineLatency());
    log(`  hookline p50 ${fmt(latency.p50, 1)} ms p99 ${fmt(latency.p99, 1)} ms`);
    if (bullmqDir) {
      log(`latency: bullmq peer at RATE=${RATE} for ${RATE_SECONDS}s`);
      bullmqLatency = await withMachineLoad(() => bullmqRun(bullmqDir, { n: Math.round(RATE * RATE_SECONDS), rate: RATE }));
      log(`  bullmq p50 ${fmt(bullmqLatency.p50, 1)} ms p99 ${fmt(bullmqLatency.p99, 1)} ms`);
    }
    if (RATE_HIGH > 0) {
      log(`latency: hookline at ${RATE_HIGH}/s for ${RATE_SECONDS}s`);
      latencyHigh = await withMachineLoad(() => hooklineLatency(RATE_HIGH));
      log(`  hookline p50 ${fmt(latencyHigh.p50, 1)} ms p99 ${fmt(latencyHigh.p99, 1)} ms`);
    }
  }

  let retrying = null;
  if (!SKIP.has('retrying')) {
    log(`retrying: ${RETRYING} deliveries in retrying, then restart`);
    retrying = await withMachineLoad(() => hooklineRetrying());
    log(`  RSS ${fmt(retrying.rssMb, 1)} MB, restart -> resumed ${fmt(retrying.restartS, 2)} s`);
  }

  // Report ---------------------------------------------------------------------------------------
  const ours = median(rounds.map((r) => r.hookline?.perS));
  const bull = median(rounds.map((r) => r.bullmq?.perS));
  const ceil = median(rounds.map((r) => r.ceiling?.perS));
  const ratioBullmq = ours / bull;
  const ratioCeiling = ours / ceil;
  const oursBatch = median(rounds.map((r) => r.batch?.perS));
  const batchRatioBullmq = oursBatch / bull;
  const batchRatioCeiling = oursBatch / ceil;
  const bullD = median(rounds.map((r) => r.bullmqDurable?.perS));
  const ratioBullmqD = ours / bullD;
  const batchRatioBullmqD = oursBatch / bullD;
  const cpuPerDelivery = median(rounds.map((r) => r.hookline?.cpuMsPerDelivery));
  const cpuPerDeliveryBatch = median(rounds.map((r) => r.batch?.cpuMsPerDelivery));
  const senderCpu = median(rounds.map((r) => r.ceiling?.senderCpuMsPerRequest));
  const cpuRatio = cpuPerDelivery / senderCpu;
  const cpuRatioBatch = cpuPerDeliveryBatch / senderCpu;
  const floorPerS = median(rounds.map((r) => r.floor?.perS));
  const floorBatchPerS = median(rounds.map((r) => r.floorBatch?.perS));
  const floorCpu = median(rounds.map((r) => r.floor?.cpuMsPerDelivery));
  const floorCpuBatch = median(rounds.map((r) => r.floorBatch?.cpuMsPerDelivery));
  const perRound = (pick) => rounds.map((r) => fmt(pick(r))).join(' / ');
  const perRound3 = (pick) => rounds.map((r) => fmt(pick(r), 3)).join(' / ');
  const verdict = (ok) => (ok === null ? 'n/a' : ok ? 'met' : 'MISSED');
  const check = (value, test) => (Number.isFinite(value) ? test(value) : null);
  const targets = [
    ['embedded (1 event/POST) vs bullmq peer, plain Redis', `>= ${TARGETS.ratioBullmq}x`, `${fmt(ratioBullmq, 2)}x`, check(ratioBullmq, (v) => v >= TARGETS.ratioBullmq)],
    ['embedded (1 event/POST) vs bullmq peer, durable Redis', `>= ${TARGETS.ratioBullmq}x`, `${fmt(ratioBullmqD, 2)}x`, check(ratioBullmqD, (v) => v >= TARGETS.ratioBullmq)],
    ['embedded: Hookline CPU/delivery vs ceiling sender CPU/request', `<= ${TARGETS.cpuRatioCeiling}x`, `${fmt(cpuRatio, 2)}x (${fmt(cpuPerDelivery, 3)} / ${fmt(senderCpu, 3)} ms)`, check(cpuRatio, (v) => v <= TARGETS.cpuRatioCeiling)],
    [`batch ingest (${BATCH}/request) vs bullmq peer, plain Redis`, `>= ${TARGETS.batchRatioBullmq}x`, `${fmt(batchRatioBullmq, 2)}x`, check(batchRatioBullmq, (v) => v >= TARGETS.batchRatioBullmq)],
    [`batch ingest (${BATCH}/request) vs bullmq peer, durable Redis`, `>= ${TARGETS.batchRatioBullmq}x`, `${fmt(batchRatioBullmqD, 2)}x`, check(batchRatioBullmqD, (v) => v >= TARGETS.batchRatioBullmq)],
    ['embedded (1 event/POST) vs signed ceiling (no target in issue 12)', 'reported', `${fmt(ratioCeiling, 2)}x`, null],
    ['batch: Hookline CPU/delivery vs ceiling sender CPU/request (no target)', 'reported', `${fmt(cpuRatioBatch, 2)}x`, null],
    [`batch ingest (${BATCH}/request) vs signed ceiling`, `>= ${TARGETS.batchRatioCeiling}x`, `${fmt(batchRatioCeiling, 2)}x`, check(batchRatioCeiling, (v) => v >= TARGETS.batchRatioCeiling)],
    ["the contract's floor: its CPU/delivery vs ceiling sender CPU/request (one per POST; batch)", 'reported', `${fmt(floorCpu / senderCpu, 2)}x; ${fmt(floorCpuBatch / senderCpu, 2)}x`, null],
    ["Hookline CPU/delivery vs the floor's (one per POST; batch)", 'reported', `${fmt(cpuPerDelivery / floorCpu, 2)}x; ${fmt(cpuPerDeliveryBatch / floorCpuBatch, 2)}x`, null],
    ["Hookline deliveries/s vs the floor's (one per POST; batch)", 'reported', `${fmt(ours / floorPerS, 2)}x; ${fmt(oursBatch / floorBatchPerS, 2)}x`, null],
    [`p99 ingest->receipt at ${RATE}/s`, `<= ${TARGETS.p99Ms} ms`, `${fmt(latency?.p99, 1)} ms`, check(latency?.p99, (v) => v <= TARGETS.p99Ms)],
    [`p99 ingest->receipt at ${RATE_HIGH}/s`, 'reported', `${fmt(latencyHigh?.p99, 1)} ms`, null],
    [`RssAnon with ${fmt(RETRYING)} retrying`, `<= ${TARGETS.anonMb} MB`, `${fmt(retrying?.anonMb, 1)} MB (VmRSS ${fmt(retrying?.rssMb, 1)}, LMDB-mapped ${fmt(retrying?.lmdbMappedMb, 1)})`, check(retrying?.anonMb, (v) => v <= TARGETS.anonMb)],
  ];

  const h = rounds.map((r) => r.hookline).filter(Boolean);
  const lines = [];
  lines.push('');
  lines.push(`Delivery engine bench, ${startedAt.toISOString()}, ${machine}`);
  lines.push(`commit ${gitDescribe()}; load average at start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; HOOKLINE_* from env: ${hooklineEnv}`);
  lines.push('');
  lines.push(`| Measure | Hookline (embedded) | BullMQ peer, plain Redis :${REDIS.port} | BullMQ peer, durable Redis${DURABLE_REDIS ? ` :${DURABLE_REDIS.port} (appendfsync always)` : ' (not run)'} | Signed-POST ceiling |`);
  lines.push('|---|---:|---:|---:|---:|');
  lines.push(`| deliveries/s, ${fmt(N)} x 1 KB, one event per POST, receiver 204 (median of ${ROUNDS}) | ${fmt(ours)} | ${fmt(bull)} | ${fmt(bullD)} | ${fmt(ceil)} |`);
  lines.push(`| - per round | ${perRound((r) => r.hookline?.perS)} | ${perRound((r) => r.bullmq?.perS)} | ${perRound((r) => r.bullmqDurable?.perS)} | ${perRound((r) => r.ceiling?.perS)} |`);
  lines.push(`| deliveries/s, batch ingest ${BATCH} x 1 KB per request, ${BATCH_CONCURRENCY} in flight (median of ${ROUNDS}) | ${fmt(oursBatch)} | ${fmt(bull)} | ${fmt(bullD)} | ${fmt(ceil)} |`);
  lines.push(`| - per round | ${perRound((r) => r.batch?.perS)} | | | |`);
  lines.push(`| the contract's floor (bench/engine/floor.mjs), same loads: deliveries/s one per POST; batch | ${fmt(floorPerS)}; ${fmt(floorBatchPerS)} | - | - | - |`);
  lines.push(`| - its CPU ms per delivery, per round | ${perRound3((r) => r.floor?.cpuMsPerDelivery)} (batch ${perRound3((r) => r.floorBatch?.cpuMsPerDelivery)}) | | | |`);
  lines.push(`| CPU ms per delivery (Hookline serve process) / per request (ceiling sender), median; /proc | ${fmt(cpuPerDelivery, 3)} (batch ${fmt(cpuPerDeliveryBatch, 3)}) | - | - | ${fmt(senderCpu, 3)} |`);
  lines.push(`| - per round | ${perRound3((r) => r.hookline?.cpuMsPerDelivery)} (batch ${perRound3((r) => r.batch?.cpuMsPerDelivery)}) | | | ${perRound3((r) => r.ceiling?.senderCpuMsPerRequest)} (receiver ${perRound3((r) => r.ceiling?.receiverCpuMsPerRequest)}) |`);
  lines.push(`| p50 ingest->receipt at ${fmt(RATE)}/s, ${RATE_SECONDS} s | ${fmt(latency?.p50, 1)} ms | ${fmt(bullmqLatency?.p50, 1)} ms | - | - |`);
  lines.push(`| p99 ingest->receipt at ${fmt(RATE)}/s, ${RATE_SECONDS} s | ${fmt(latency?.p99, 1)} ms | ${fmt(bullmqLatency?.p99, 1)} ms | - | - |`);
  lines.push(`| p50 / p99 ingest->receipt at ${fmt(RATE_HIGH)}/s, ${RATE_SECONDS} s | ${fmt(latencyHigh?.p50, 1)} / ${fmt(latencyHigh?.p99, 1)} ms | - | - | - |`);
  lines.push(`| RssAnon / VmRSS / LMDB-mapped Rss with ${fmt(RETRYING)} deliveries in retrying | ${fmt(retrying?.anonMb, 1)} / ${fmt(retrying?.rssMb, 1)} / ${fmt(retrying?.lmdbMappedMb, 1)} MB | - | - | - |`);
  lines.push(`| restart -> resumed, ${fmt(RETRYING)} waiting deliveries | ${fmt(retrying?.restartS, 2)} s | - | - | - |`);
  lines.push('');
  lines.push('| Ratio / target | Target | This run | Verdict |');
  lines.push('|---|---:|---:|---|');
  for (const [name, target, value, ok] of targets) lines.push(`| ${name} | ${target} | ${value} | ${verdict(ok)} |`);
  lines.push('');
  lines.push('Details:');
  if (h.length) lines.push(`- hookline throughput rounds: ingest accepted ${h.map((x) => fmt(x.ingestPerS)).join(' / ')} events/s; ingest 202 p50 ${h.map((x) => fmt(x.ackP50, 1)).join(' / ')} ms, p99 ${h.map((x) => fmt(x.ackP99, 1)).join(' / ')} ms; serve process CPU ${h.map((x) => x.cpuCores.toFixed(2)).join(' / ')} cores, ${h.map((x) => x.cpuMsPerDelivery.toFixed(3)).join(' / ')} CPU ms per delivery; peak RSS ${h.map((x) => fmt(x.hwmMb)).join(' / ')} MB; ingest body ${h[0]?.ingestBytes} B, delivered envelope ${h[0]?.deliveredBytes} B; duplicates ${h.map((x) => x.duplicates).join('/')}; sampled signatures verified ${h.map((x) => x.verified).join('/')}, bad ${h.map((x) => x.badSignatures).join('/')}${h.some((x) => x.timedOut) ? '; SOME ROUNDS TIMED OUT' : ''}`);
  const b = rounds.map((r) => r.batch).filter(Boolean);
  if (b.length) lines.push(`- hookline batch rounds (${BATCH} events per request): ingest accepted ${b.map((x) => fmt(x.ingestPerS)).join(' / ')} events/s; batch 202 p50 ${b.map((x) => fmt(x.ackP50, 1)).join(' / ')} ms, p99 ${b.map((x) => fmt(x.ackP99, 1)).join(' / ')} ms; serve process CPU ${b.map((x) => x.cpuCores.toFixed(2)).join(' / ')} cores, ${b.map((x) => x.cpuMsPerDelivery.toFixed(3)).join(' / ')} CPU ms per delivery; peak RSS ${b.map((x) => fmt(x.hwmMb)).join(' / ')} MB; request body ${b[0]?.ingestBytes} B; duplicates ${b.map((x) => x.duplicates).join('/')}; bad signatures ${b.map((x) => x.badSignatures).join('/')}${b.some((x) => x.timedOut) ? '; SOME ROUNDS TIMED OUT' : ''}`);
  if (latency) lines.push(`- hookline latency run (after ${fmt(WARMUP)} warm-up events at the same rate): ${latency.received}/${latency.n} delivered, achieved ingest ${fmt(latency.achievedRate)}/s, p90 ${fmt(latency.p90, 1)} ms, max ${fmt(latency.max, 1)} ms; ingest 202 p50 ${fmt(latency.ackP50, 1)} ms, p99 ${fmt(latency.ackP99, 1)} ms; bad signatures ${latency.badSignatures}`);
  if (latencyHigh) lines.push(`- hookline latency run at ${fmt(RATE_HIGH)}/s (fresh node, ${fmt(WARMUP)} warm-up events at that rate): ${latencyHigh.received}/${latencyHigh.n} delivered, achieved ingest ${fmt(latencyHigh.achievedRate)}/s, p90 ${fmt(latencyHigh.p90, 1)} ms, max ${fmt(latencyHigh.max, 1)} ms; ingest 202 p50 ${fmt(latencyHigh.ackP50, 1)} ms, p99 ${fmt(latencyHigh.ackP99, 1)} ms; bad signatures ${latencyHigh.badSignatures}`);
  const fl = rounds.flatMap((r) => [r.floor, r.floorBatch]).filter(Boolean);
  // The floor keeps the contract only if its deliveries verify as Hookline's do.
  if (fl.length) lines.push(`- floor rounds (one per POST, then batch, per round): CPU ${fl.map((x) => x.cpuCores.toFixed(2)).join(' / ')} cores; sampled signatures verified ${fl.map((x) => x.verified).join('/')}, bad ${fl.map((x) => x.badSignatures).join('/')}; duplicates ${fl.map((x) => x.duplicates).join('/')}${fl.some((x) => x.timedOut) ? '; SOME ROUNDS TIMED OUT' : ''}`);
  const c = rounds.map((r) => r.ceiling).filter(Boolean);
  if (c.length) lines.push(`- ceiling rounds: sender CPU ${c.map((x) => fmt(x.senderCpuS, 2)).join(' / ')} s over ${CEILING_SECONDS} s + 1 s warm-up (start-up included), per request ${c.map((x) => fmt(x.senderCpuMsPerRequest, 3)).join(' / ')} ms; receiver ${c.map((x) => fmt(x.receiverCpuMsPerRequest, 3)).join(' / ')} ms; errors ${c.map((x) => x.errors).join('/')}`);
  const d = rounds.map((r) => r.bullmqDurable).filter(Boolean);
  if (d.length) lines.push(`- bullmq durable rounds (Redis :${DURABLE_REDIS.port}, appendonly yes, appendfsync always): ${d.map((x) => fmt(x.perS)).join(' / ')} deliveries/s; received ${d.map((x) => x.received).join('/')}; bad signatures ${d.map((x) => x.badSignatures).join('/')}${d.some((x) => x.timedOut) ? '; SOME ROUNDS TIMED OUT' : ''}`);
  if (bullmqLatency) lines.push(`- bullmq latency run: ${bullmqLatency.received} delivered, p50 ${fmt(bullmqLatency.p50, 1)} ms, p99 ${fmt(bullmqLatency.p99, 1)} ms (peer defaults: BULK=500, CONCURRENCY=100)`);
  if (retrying) lines.push(`- retrying run: ingest ${fmt(retrying.ingestPerS)}/s (${retrying.ingestErrors} errors), all ${fmt(retrying.scheduled)} scheduled after ${fmt(retrying.toRetryingS, 1)} s, live ${fmt(retrying.live)}, first attempts seen by the 500 receiver ${fmt(retrying.attemptsSeen)}, 1 s after the last was scheduled VmRSS ${fmt(retrying.afterBurst?.rssMb, 1)} MB (anonymous ${fmt(retrying.afterBurst?.anonMb, 1)} MB), ${fmt(RETRYING_SETTLE_S)} s after VmRSS ${fmt(retrying.rssMb, 1)} MB (anonymous ${fmt(retrying.anonMb, 1)} MB, file-backed ${fmt(retrying.fileMb, 1)} MB of which the LMDB map ${fmt(retrying.lmdbMappedMb, 1)} MB, LMDB files ${fmt(retrying.dataMb, 1)} MB on disk; VmHWM ${fmt(retrying.hwmMb, 1)} MB); SIGTERM -> exit ${fmt(retrying.stopS, 2)} s (code ${retrying.stopExit}); restart: ${fmt(retrying.liveAfter)} waiting on /metrics ${fmt(retrying.restartS, 2)} s after spawn${retrying.resumedLogS !== undefined ? `, 'resumed waiting deliveries' logged at ${fmt(retrying.resumedLogS, 2)} s (waiting=${retrying.resumedLogged})` : ''}; VmRSS after restart ${fmt(retrying.rssAfterMb, 1)} MB (anonymous ${fmt(retrying.after?.anonMb, 1)}, file-backed ${fmt(retrying.after?.fileMb, 1)}, LMDB map ${fmt(retrying.after?.lmdbMappedMb, 1)}); idle node before ingest: VmRSS ${fmt(retrying.idle?.rssMb, 1)} MB (anonymous ${fmt(retrying.idle?.anonMb, 1)}, file-backed ${fmt(retrying.idle?.fileMb, 1)})`);
  const busy = (x) => (x ? `${fmt(x.machineBusyPct)}% (other ${fmt(x.otherCores, 2)})` : 'n/a');
  lines.push(`- machine load per phase, as all-core CPU busy % (and cores used by processes outside this bench and redis): throughput rounds hookline ${rounds.map((r) => busy(r.hookline)).join(' / ')}, batch ${rounds.map((r) => busy(r.batch)).join(' / ')}, bullmq ${rounds.map((r) => busy(r.bullmq)).join(' / ')}, bullmq durable ${rounds.map((r) => busy(r.bullmqDurable)).join(' / ')}, ceiling ${rounds.map((r) => busy(r.ceiling)).join(' / ')}; latency hookline ${busy(latency)}, bullmq ${busy(bullmqLatency)}, hookline ${fmt(RATE_HIGH)}/s ${busy(latencyHigh)}; retrying ${busy(retrying)}`);
  for (const note of notes) lines.push(`- ${note}`);
  const met = targets.filter(([, , , ok]) => ok === true).length;
  const judged = targets.filter(([, , , ok]) => ok !== null).length;
  const num2 = (x, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)) : 'na');
  lines.push('');
  lines.push(`engine_bench n=${N} rounds=${ROUNDS} warmup=${WARMUP} ours_per_s=${num2(ours, 0)} bullmq_per_s=${num2(bull, 0)} ceiling_per_s=${num2(ceil, 0)} bullmq_durable_per_s=${num2(bullD, 0)} ratio_bullmq=${num2(ratioBullmq, 2)} ratio_bullmq_durable=${num2(ratioBullmqD, 2)} ratio_ceiling=${num2(ratioCeiling, 2)} cpu_ms_per_delivery=${num2(cpuPerDelivery, 3)} ceiling_sender_cpu_ms_per_request=${num2(senderCpu, 3)} ratio_cpu=${num2(cpuRatio, 2)} batch=${BATCH} batch_per_s=${num2(oursBatch, 0)} ratio_batch_bullmq=${num2(batchRatioBullmq, 2)} ratio_batch_bullmq_durable=${num2(batchRatioBullmqD, 2)} ratio_batch_ceiling=${num2(batchRatioCeiling, 2)} p50_ms=${num2(latency?.p50, 2)} p99_ms=${num2(latency?.p99, 2)} rate_high=${RATE_HIGH} p99_high_ms=${num2(latencyHigh?.p99, 2)} bullmq_p50_ms=${num2(bullmqLatency?.p50)} bullmq_p99_ms=${num2(bullmqLatency?.p99)} retrying=${RETRYING} rss_mb=${num2(retrying?.rssMb)} anon_mb=${num2(retrying?.anonMb)} anon_1s_mb=${num2(retrying?.afterBurst?.anonMb)} lmdb_mapped_mb=${num2(retrying?.lmdbMappedMb)} restart_s=${num2(retrying?.restartS, 2)} floor_per_s=${num2(floorPerS, 0)} floor_batch_per_s=${num2(floorBatchPerS, 0)} floor_cpu_ms_per_delivery=${num2(floorCpu, 3)} floor_batch_cpu_ms_per_delivery=${num2(floorCpuBatch, 3)} targets_met=${met}/${judged}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return met === judged ? 0 : 2;
}

main().then(
  (code) => {
    cleanupSync();
    process.exit(env.BENCH_STRICT === '1' ? code : 0);
  },
  (error) => {
    process.stderr.write(`bench failed: ${error.stack ?? error}\n`);
    cleanupSync();
    process.exit(1);
  },
);
