#!/usr/bin/env node
// Issue 35: backlogs as large as the disk, fair across projects, gentle with failing receivers
// (`npm run bench:backlog`). Runs the compiled dist/ (build first), every party in a process of its own,
// all traffic on 127.0.0.1. Three phases, each bounded in count and time:
//
//   1. backlog: a data dir whose project A holds BENCH_BACKLOG deliveries waiting for a dead endpoint
//      (http://127.0.0.1:9, where nothing listens), written straight through dist/'s HooklineStore with
//      lib.mjs's writeRetrying (restart.mjs's records: event and delivery in `retrying` after one failed
//      attempt), ~256-byte events, due spread at random over 6 to 24 hours from the fill so none falls due
//      during the bench. On it `hookline serve` starts; project B is made through the admin API with a
//      204 receiver (bench/engine/receiver.mjs). Measured: spawn -> /readyz 200; RssAnon at rest after the
//      start and again after B's phases once the node has been idle BENCH_SETTLE s; B's batch ingest
//      (events/s, and the serve process's CPU per event until B's receiver has them all, from /proc)
//      against the same on a fresh node without a backlog, which runs beside it (BENCH_ROUNDS rounds, the
//      two taking turns); B's ingest->receipt latency at
//      BENCH_LATENCY_RATE/s for BENCH_LATENCY_SECONDS (also on the fresh node, for reference).
//   2. recovery: a fresh node whose project holds BENCH_RECOVERY deliveries in `retrying` to an endpoint
//      that was down, all due BENCH_RECOVERY_DUE s after the fill; the endpoint (a 204 receiver) is up.
//      Before they fall due, PUT /v1/webhook sets `rateLimitPerSecond: 500` (a build that answers 400 for
//      the field: one line says so, and the phase goes on without the limit, measuring the burst). The
//      receiver counts arrivals: the most in any one-second window, sliding over the arrival times, and
//      the distinct webhook-ids against the backlog.
//   3. dead: a fresh node whose project holds BENCH_DEAD deliveries in `retrying`, all due at the start,
//      to a receiver answering 503; the receiver's requests from the spawn to BENCH_DEAD_SECONDS after
//      /readyz, given per minute (before the circuit breaker, every delivery was tried once; now the
//      attempts in flight when it opens, then a probe at most every HOOKLINE_CIRCUIT_PROBE_INTERVAL).
//   4. busy (fairness): BENCH_BUSY deliveries of project A, all due at the start to a 503 receiver,
//      while project B's ingest->receipt latency, then its batch ingest, are measured on the same node
//      (A's count of attempts failed unsent, read before and after each, shows A's drain went on).
//
//   npm run build && npm run bench:backlog
//
// Env (defaults in brackets):
//   BENCH_BACKLOG [10000000]      deliveries waiting in project A (develop with 200000: the fill of 10M
//                                 took 7 min here and writes about 13 GB, 1.35 KB per delivery)
//   BENCH_DATA_DIR                fill this dir once and reuse it in later runs while its earliest
//                                 delivery is over 30 min from due (as restart.mjs does; kept at the end).
//                                 Each run adds its project B to it
//   BENCH_INGEST_N [50000]        events of B's batch-ingest run, 100 per request, 8 requests in flight
//   BENCH_ROUNDS [3]              B's batch-ingest rounds on the backlog node and the fresh node, which
//                                 run side by side and take turns (the order swapped each round); the
//                                 ratio is the median of the rounds' ratios
//   BENCH_LATENCY_RATE [500], BENCH_LATENCY_SECONDS [20]   B's latency run (one event per POST, ~1 KB)
//   BENCH_SETTLE [5]              idle seconds before each RssAnon reading
//   BENCH_RECOVERY [20000], BENCH_RECOVERY_DUE [10]   phase 2's deliveries, and seconds from the fill to
//                                 when they fall due
//   BENCH_DEAD [5000], BENCH_DEAD_SECONDS [60]        phase 3's deliveries and its window
//   BENCH_BUSY [200000]           phase 4's deliveries, due at the start to a 503 receiver
//   BENCH_SKIP                    comma list of phases to leave out: backlog, fresh, recovery, dead, busy
//   BENCH_PROFILE_DIR             run every serve process with --cpu-prof, profiles into that dir
//   BENCH_KEEP=1                  keep temp dirs and logs (they are removed otherwise)
//   BENCH_STRICT=1                exit 2 when a target is missed (default: exit 0 once it ran)
// A build from before waiting deliveries moved to disk held every one in memory and refused B's events
// once the backlog passed HOOKLINE_MAX_LIVE_DELIVERIES (503 overloaded; the table says so, and the p99
// counts as missed): set that above BENCH_BACKLOG to measure what the backlog costs B on such a build.
// HOOKLINE_* variables in the environment reach every serve process (e.g. HOOKLINE_DELIVERY_WINDOW);
// the bench sets data dir, port, host, keys, HOOKLINE_ALLOW_PRIVATE_NETWORKS=1 and HOOKLINE_RATE_LIMIT=0.
// Prints each figure as it is measured, then a table of every figure against its target; writes
// bench/results/backlog.json.
// Smoke run: BENCH_BACKLOG=20000 BENCH_INGEST_N=5000 BENCH_LATENCY_SECONDS=3 BENCH_RECOVERY=2000 BENCH_DEAD=500 BENCH_DEAD_SECONDS=10 npm run bench:backlog
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { busyCores, cpuSeconds, dirSizeMb, freePort, jsonReport, killTree, launch, machineCpu, metricValue, nowMs, num, procMemory, quantile, request, serveEnv, sleep, stopChild, waitFor, webhookRecord, writeRetrying } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const BACKLOG = num('BENCH_BACKLOG', 10_000_000);
const INGEST_N = num('BENCH_INGEST_N', 50_000);
const LATENCY_RATE = num('BENCH_LATENCY_RATE', 500);
const LATENCY_SECONDS = num('BENCH_LATENCY_SECONDS', 20);
const SETTLE_S = num('BENCH_SETTLE', 5);
const RECOVERY = num('BENCH_RECOVERY', 20_000);
const RECOVERY_DUE_S = num('BENCH_RECOVERY_DUE', 10);
const RECOVERY_RATE = 500;
const DEAD = num('BENCH_DEAD', 5000);
const DEAD_SECONDS = num('BENCH_DEAD_SECONDS', 60);
const BUSY = num('BENCH_BUSY', 200_000);
const ROUNDS = num('BENCH_ROUNDS', 3);
const SKIP = new Set((env.BENCH_SKIP ?? '').split(',').map((s) => s.trim()).filter(Boolean));
const KEEP = env.BENCH_KEEP === '1';
const API_KEY = 'hk_bench_backlog';
const ADMIN_KEY = 'hk_bench_backlog_admin';
const SERVE_JS = path.join(root, 'dist', 'cli', 'main.js');
const DEAD_URL = 'http://127.0.0.1:9/dead';
const HOUR = 3_600_000;

const TARGETS = { restartS: 5, anonMb: 250, ingestRatio: 0.9, p99Ms: 50, recoveryMaxPerS: 550, deadPerMinute: 100 };

const log = (line) => process.stderr.write(`[backlog ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const fmt = (x, digits = 0, unit = '') => (Number.isFinite(x) ? `${x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })}${unit}` : 'n/a');

if (!existsSync(SERVE_JS)) {
  process.stderr.write('bench:backlog runs dist/ and builds nothing: npm run build first\n');
  process.exit(1);
}
const { HooklineStore } = await import(path.join(root, 'dist', 'store', 'store.js'));
const { hashApiKey } = await import(path.join(root, 'dist', 'actors', 'engine.js'));

// Children and temp dirs, torn down on any exit --------------------------------------------------

const children = new Set();
const tempDirs = new Set();
process.on('exit', () => {
  for (const cp of children) killTree(cp, 'SIGKILL');
  if (KEEP) { if (tempDirs.size) process.stderr.write(`bench:backlog kept ${[...tempDirs].join(' ')}\n`); } else for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130));

function tempDir(label) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-backlog-${label}-`));
  tempDirs.add(dir);
  return dir;
}

const spawnChild = (args, extraEnv, logFile) => launch(process.execPath, args, { cwd: root, extraEnv, logFile, children, detached: true });

// The parties ---------------------------------------------------------------------------------

async function startReceiver(dir, status) {
  const port = await freePort();
  const cp = spawnChild([path.join(here, 'engine', 'receiver.mjs')], { PORT: String(port), STATUS: String(status) }, path.join(dir, `receiver-${port}.log`));
  const url = `http://127.0.0.1:${port}`;
  await waitFor('receiver up', () => request('GET', `${url}/stats`), { timeoutMs: 10_000, child: cp });
  return { cp, url, stats: () => request('GET', `${url}/stats`), reset: () => request('POST', `${url}/reset`) };
}

/** Spawns `hookline serve` on `dataDir` and waits for /readyz 200; `readyS` is spawn -> ready. */
async function startNode(dir, dataDir, { timeoutMs = 900_000 } = {}) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logFile = path.join(dir, `hookline-${port}.log`);
  const spawnAt = nowMs();
  const profile = env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE_DIR)}`] : [];
  const cp = spawnChild([...profile, SERVE_JS, 'serve'], { ...serveEnv({ dataDir, port, apiKey: API_KEY }), HOOKLINE_ADMIN_KEY: ADMIN_KEY, HOOKLINE_RATE_LIMIT: '0' }, logFile);
  let peakAnonMb = 0;
  await waitFor('hookline /readyz', async () => {
    peakAnonMb = Math.max(peakAnonMb, procMemory(cp.pid).anonMb || 0);
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200;
  }, { timeoutMs, intervalMs: 20, child: cp }).catch((error) => {
    throw new Error(`${error.message}\n--- ${logFile} (tail) ---\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
  });
  const readyS = (nowMs() - spawnAt) / 1000;
  const metric = async (name) => metricValue(await request('GET', `${url}/metrics`, { parse: 'auto', timeoutMs: 30_000 }), name);
  return { cp, url, readyS, peakAnonMb, logFile, metric, stop: () => stopChild(cp, { timeoutMs: 60_000, group: true }) };
}

/** Project B, made through the admin API, its webhook on `receiver` (the receiver verifies a sample). */
async function makeProject(node, receiver, name) {
  const { apiKey } = await request('POST', `${node.url}/admin/v1/projects`, { key: ADMIN_KEY, body: { name } });
  await request('PUT', `${node.url}/v1/webhook`, { key: apiKey, body: { callbackUrl: `${receiver.url}/hook`, status: 'active', eventTypes: ['service.trigger.event'] } });
  const { secret } = await request('GET', `${node.url}/v1/webhook/secret`, { key: apiKey });
  await request('POST', `${receiver.url}/secret`, { body: { secret } });
  return apiKey;
}

async function runLoadgen(node, apiKey, { n, rate = 0, batch = 1, concurrency = 64 }) {
  const cp = spawnChild([path.join(here, 'engine', 'loadgen.mjs')], { TARGET: node.url, API_KEY: apiKey, N: String(n), RATE: String(rate), BATCH: String(batch), CONCURRENCY: String(concurrency) }, null);
  const report = await jsonReport(cp, 'loadgen');
  if (report.errors > 0) log(`  loadgen: ${report.errors} requests failed, answers ${JSON.stringify(report.statuses)}`);
  return report;
}

/** Waits until the receiver has `n` distinct deliveries, `timeoutMs` at most, or 30 s without progress; its stats. */
async function waitReceived(receiver, n, node, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const s = await receiver.stats();
    if (s.unique >= n) return s;
    if (s.unique !== last) { last = s.unique; lastChange = Date.now(); }
    if (node.cp.exitCode !== null || node.cp.signalCode !== null) throw new Error(`hookline exited (${s.unique}/${n} received)`);
    if (Date.now() > deadline || Date.now() - lastChange > 30_000) {
      log(`  only ${s.unique}/${n} received when the wait ended`);
      return { ...s, timedOut: true };
    }
    await sleep(100);
  }
}

/** RssAnon after `SETTLE_S` idle seconds. */
async function anonAtRest(node) {
  await sleep(SETTLE_S * 1000);
  return procMemory(node.cp.pid).anonMb;
}

// Project B's measures, on a node with or without the backlog ---------------------------------

/** `run()`'s result with `machineBusyCores`: the cores anyone used meanwhile (this bench's processes too). */
async function withMachineLoad(run) {
  const before = machineCpu();
  const t0 = performance.now();
  const result = await run();
  return { ...result, machineBusyCores: busyCores(before, machineCpu(), (performance.now() - t0) / 1000) };
}

async function ingestRun(node, receiver, apiKey) {
  await receiver.reset();
  const cpu0 = cpuSeconds(node.cp.pid);
  const ingest = await runLoadgen(node, apiKey, { n: INGEST_N, batch: 100, concurrency: 8 });
  const s = await waitReceived(receiver, ingest.accepted, node, Math.max(120_000, INGEST_N * 2));
  const cpuS = cpuSeconds(node.cp.pid) - cpu0;
  return {
    events: INGEST_N, accepted: ingest.accepted, errors: ingest.errors, statuses: ingest.statuses, ingestPerS: ingest.accepted ? ingest.ingest_per_s : 0,
    deliveredPerS: s.unique ? Math.round(s.unique / ((s.last_at - ingest.first_send_at) / 1000)) : 0, received: s.unique,
    cpuMsPerEvent: s.unique ? (cpuS * 1000) / s.unique : NaN, badSignatures: s.bad_signatures, timedOut: !!s.timedOut,
  };
}

async function latencyRun(node, receiver, apiKey) {
  await receiver.reset();
  const n = Math.round(LATENCY_RATE * LATENCY_SECONDS);
  const ingest = await runLoadgen(node, apiKey, { n, rate: LATENCY_RATE });
  const s = await waitReceived(receiver, ingest.accepted, node, 120_000);
  return { rate: LATENCY_RATE, events: n, accepted: ingest.accepted, errors: ingest.errors, received: s.unique, p50Ms: s.p50_ms, p99Ms: s.p99_ms, maxMs: s.max_ms, achievedRate: ingest.ingest_per_s };
}

/** A figure of A's work read before and after `run` (when `progress` is given), with the machine's load. */
async function during(run, progress) {
  const before = progress ? await progress() : null;
  const result = await withMachineLoad(run);
  if (progress) result.aProgress = { before, after: await progress() };
  return result;
}

const aLine = (r) => (r.aProgress ? `; meanwhile A's attempts failed unsent ${fmt(r.aProgress.before)} -> ${fmt(r.aProgress.after)}` : '');

async function measureIngest(label, node, receiver, apiKey, progress = null) {
  const ingest = await during(() => ingestRun(node, receiver, apiKey), progress);
  log(`  ${label}: B's batch ingest ${fmt(ingest.accepted)}/${fmt(INGEST_N)} accepted at ${fmt(ingest.ingestPerS)} events/s, all delivered at ${fmt(ingest.deliveredPerS)}/s, ${fmt(ingest.cpuMsPerEvent, 3)} CPU ms per event (machine ${fmt(ingest.machineBusyCores, 2)} cores busy${aLine(ingest)})`);
  return ingest;
}

async function measureLatency(label, node, receiver, apiKey, progress = null) {
  const latency = await during(() => latencyRun(node, receiver, apiKey), progress);
  log(`  ${label}: B's ingest->receipt at ${LATENCY_RATE}/s for ${LATENCY_SECONDS} s: p50 ${fmt(latency.p50Ms, 1)} ms, p99 ${fmt(latency.p99Ms, 1)} ms, max ${fmt(latency.maxMs, 1)} ms (${fmt(latency.received)}/${fmt(latency.events)} received; machine ${fmt(latency.machineBusyCores, 2)} cores busy${aLine(latency)})`);
  return latency;
}

/**
 * Project B's batch ingest and its ingest->receipt latency on `node`; `latencyFirst` runs the latency
 * run first (while a backlog of A's is due, both should fall within its drain). `progress`, given,
 * reads a figure of A's work before and after each run, so that the report shows it went on meanwhile.
 */
async function projectB(label, node, receiver, { latencyFirst = false, progress = null } = {}) {
  const apiKey = await makeProject(node, receiver, `bench-b-${Date.now()}`);
  if (latencyFirst) {
    const latency = await measureLatency(label, node, receiver, apiKey, progress);
    return { latency, ingest: await measureIngest(label, node, receiver, apiKey, progress) };
  }
  const ingest = await measureIngest(label, node, receiver, apiKey, progress);
  return { ingest, latency: await measureLatency(label, node, receiver, apiKey, progress) };
}

const median = (values) => quantile(values.filter(Number.isFinite).sort((a, b) => a - b), 0.5) ?? NaN;

/**
 * B on the backlog node against B on a fresh node, both up at once (the one not measured idles):
 * BENCH_ROUNDS rounds of batch ingest taking turns (the order swapped each round), then one latency
 * run each. The ratio is the median of the rounds' ratios, each taken within its round.
 */
async function compareWithFresh(node, receiver, fresh) {
  const stamp = Date.now();
  const sides = {
    backlog: { label: 'with the backlog', node, receiver, apiKey: await makeProject(node, receiver, `bench-b-${stamp}`), rounds: [] },
    fresh: { label: 'fresh node', node: fresh.node, receiver: fresh.receiver, apiKey: await makeProject(fresh.node, fresh.receiver, `bench-b-${stamp}`), rounds: [] },
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? ['backlog', 'fresh'] : ['fresh', 'backlog']) {
      const side = sides[name];
      side.rounds.push(await measureIngest(`round ${round + 1}, ${side.label}`, side.node, side.receiver, side.apiKey));
    }
  }
  const ratios = sides.backlog.rounds.map((r, i) => r.ingestPerS / sides.fresh.rounds[i].ingestPerS);
  const cpuRatios = sides.backlog.rounds.map((r, i) => r.cpuMsPerEvent / sides.fresh.rounds[i].cpuMsPerEvent);
  log(`  B's ingest, backlog / fresh node, by round: ${ratios.map((r) => fmt(r, 2, 'x')).join(', ')}; CPU per event ${cpuRatios.map((r) => fmt(r, 2, 'x')).join(', ')}`);
  const typical = (rounds) => ({ ...rounds[0], ingestPerS: median(rounds.map((r) => r.ingestPerS)), cpuMsPerEvent: median(rounds.map((r) => r.cpuMsPerEvent)), deliveredPerS: median(rounds.map((r) => r.deliveredPerS)) });
  const result = {
    backlog: { ingest: typical(sides.backlog.rounds), ingestRounds: sides.backlog.rounds, latency: await measureLatency(sides.backlog.label, node, receiver, sides.backlog.apiKey) },
    fresh: { ingest: typical(sides.fresh.rounds), ingestRounds: sides.fresh.rounds, latency: await measureLatency(sides.fresh.label, fresh.node, fresh.receiver, sides.fresh.apiKey) },
    ingestRatio: median(ratios),
    cpuRatio: median(cpuRatios),
  };
  return result;
}

// Phase 1: the backlog ---------------------------------------------------------------------

/** A due time 6 to 24 hours after `from`, scattered over the ids (not in their order). */
const scatteredDue = (from) => (n) => from + 6 * HOUR + Math.floor((((n * 2654435761) >>> 0) / 2 ** 32) * 18 * HOUR);

async function fillBacklog(dataDir) {
  const t0 = performance.now();
  const store = new HooklineStore({ path: dataDir });
  const now = Date.now();
  await store.createProject({ id: 'default', name: 'A', createdAt: now }, hashApiKey(API_KEY));
  await store.putWebhook('default', webhookRecord(DEAD_URL, { now }));
  await writeRetrying(store, 'default', { count: BACKLOG, tag: 'BACKLOG', eventBytes: 256, dueAt: scatteredDue(now), progress: (written) => log(`  ${fmt(written)} written`) });
  await store.close();
  return { at: now, firstDueAt: now + 6 * HOUR, fillS: (performance.now() - t0) / 1000 };
}

async function backlogPhase() {
  const result = { backlog: BACKLOG };
  const reused = env.BENCH_DATA_DIR ? path.resolve(env.BENCH_DATA_DIR) : null;
  const dir = reused ?? tempDir('a');
  const dataDir = path.join(dir, 'data');
  const mark = path.join(dir, `filled-${BACKLOG}.json`);
  const previous = reused && existsSync(mark) ? JSON.parse(readFileSync(mark, 'utf8')) : null;
  if (previous && previous.firstDueAt - Date.now() > 30 * 60_000) {
    log(`reusing the ${fmt(BACKLOG)} waiting deliveries filled into ${dataDir} at ${new Date(previous.at).toISOString()}`);
    result.fillS = null;
  } else {
    if (reused) { rmSync(dir, { recursive: true, force: true }); mkdirSync(dir, { recursive: true }); }
    log(`filling ${dataDir} with ${fmt(BACKLOG)} waiting deliveries`);
    const filled = await fillBacklog(dataDir);
    if (reused) writeFileSync(mark, JSON.stringify(filled));
    result.fillS = filled.fillS;
    log(`  filled in ${fmt(filled.fillS, 1)} s`);
  }
  result.dataMb = dirSizeMb(dataDir);
  log(`  data dir ${fmt(result.dataMb)} MB on disk (${fmt((result.dataMb * 2 ** 20) / BACKLOG)} B per waiting delivery)`);
  const receiver = await startReceiver(dir, 204);
  const node = await startNode(dir, dataDir);
  // The fresh node runs beside it, idle while the backlog node is measured, for B's rounds in turn.
  let fresh = null;
  try {
    result.restartS = node.readyS;
    result.peakAnonWhileStartingMb = node.peakAnonMb;
    result.liveAtReady = await node.metric('hookline_live_deliveries');
    log(`  restart: spawn -> /readyz 200 in ${fmt(node.readyS, 2)} s (RssAnon at most ${fmt(node.peakAnonMb, 1)} MB meanwhile); hookline_live_deliveries ${fmt(result.liveAtReady)}`);
    result.anonAtStartMb = await anonAtRest(node);
    log(`  RssAnon at rest after the start: ${fmt(result.anonAtStartMb, 1)} MB`);
    if (!SKIP.has('fresh')) {
      const freshDir = tempDir('fresh');
      const freshReceiver = await startReceiver(freshDir, 204);
      fresh = { receiver: freshReceiver, node: await startNode(freshDir, path.join(freshDir, 'data')) };
    }
    if (fresh) {
      const compared = await compareWithFresh(node, receiver, fresh);
      Object.assign(result, compared.backlog, { ingestRatio: compared.ingestRatio, cpuRatio: compared.cpuRatio });
      freshMeasured = compared.fresh;
    } else {
      Object.assign(result, await projectB('with the backlog', node, receiver));
    }
    result.anonAfterMb = await anonAtRest(node);
    result.memoryAfter = procMemory(node.cp.pid);
    log(`  RssAnon at rest after B's phases: ${fmt(result.anonAfterMb, 1)} MB (VmRSS ${fmt(result.memoryAfter.rssMb, 1)}, VmHWM ${fmt(result.memoryAfter.hwmMb, 1)})`);
  } finally {
    await node.stop();
    await stopChild(receiver.cp, { group: true });
    if (fresh) {
      await fresh.node.stop();
      await stopChild(fresh.receiver.cp, { group: true });
    }
    if (reused) log(`  kept ${dir}`);
  }
  return result;
}

/** Set when the backlog phase measured the fresh node beside it (in rounds taken in turn). */
let freshMeasured = null;

async function freshPhase() {
  if (freshMeasured) return freshMeasured;
  const dir = tempDir('fresh');
  const receiver = await startReceiver(dir, 204);
  const node = await startNode(dir, path.join(dir, 'data'));
  try {
    return await projectB('fresh node', node, receiver);
  } finally {
    await node.stop();
    await stopChild(receiver.cp, { group: true });
  }
}

// Phases 2 and 3: a node whose one project has `count` deliveries waiting for `receiver` -------

async function nodeWithWaiting(dir, receiver, count, tag, dueAt) {
  const dataDir = path.join(dir, 'data');
  const store = new HooklineStore({ path: dataDir });
  const now = Date.now();
  await store.createProject({ id: 'default', name: tag, createdAt: now }, hashApiKey(API_KEY));
  await store.putWebhook('default', webhookRecord(`${receiver.url}/hook`, { now }));
  await writeRetrying(store, 'default', { count, tag, eventBytes: 256, dueAt: () => dueAt });
  await store.close();
  return startNode(dir, dataDir);
}

async function recoveryPhase() {
  const dir = tempDir('recovery');
  const receiver = await startReceiver(dir, 204);
  const dueAt = Date.now() + RECOVERY_DUE_S * 1000;
  const node = await nodeWithWaiting(dir, receiver, RECOVERY, 'RECOVERY', dueAt);
  const result = { backlog: RECOVERY, rateLimitPerSecond: RECOVERY_RATE, supported: true };
  try {
    const webhook = { callbackUrl: `${receiver.url}/hook`, status: 'active', eventTypes: ['service.trigger.event'] };
    try {
      await request('PUT', `${node.url}/v1/webhook`, { key: API_KEY, body: { ...webhook, rateLimitPerSecond: RECOVERY_RATE } });
    } catch (error) {
      if (!/-> 400 .*rateLimitPerSecond/s.test(error.message)) throw error;
      result.supported = false;
      console.log('rateLimitPerSecond: not supported by this build');
    }
    result.secondsBeforeDue = (dueAt - Date.now()) / 1000;
    if (result.secondsBeforeDue < 0) log(`  the webhook was set ${fmt(-result.secondsBeforeDue, 1)} s after the backlog fell due (raise BENCH_RECOVERY_DUE)`);
    const s = await waitReceived(receiver, RECOVERY, node, Math.max(0, dueAt - Date.now()) + (RECOVERY / RECOVERY_RATE) * 2000 + 60_000);
    Object.assign(result, { received: s.received, unique: s.unique, duplicates: s.duplicates, maxPer1s: s.max_per_1s, drainS: (s.last_at - dueAt) / 1000, timedOut: !!s.timedOut });
    log(`  recovery${result.supported ? ` at rateLimitPerSecond ${RECOVERY_RATE}` : ' without a rate limit'}: most in any one second ${fmt(s.max_per_1s)}; ${fmt(s.unique)}/${fmt(RECOVERY)} distinct webhook-ids (${fmt(s.received)} requests) by ${fmt(result.drainS, 1)} s after due`);
  } finally {
    await node.stop();
    await stopChild(receiver.cp, { group: true });
  }
  return result;
}

async function deadPhase() {
  const dir = tempDir('dead');
  const receiver = await startReceiver(dir, 503);
  const node = await nodeWithWaiting(dir, receiver, DEAD, 'DEAD', Date.now());
  try {
    await sleep(DEAD_SECONDS * 1000);
    const s = await receiver.stats();
    const result = { waiting: DEAD, seconds: DEAD_SECONDS, requests: s.received, perMinute: (s.received * 60) / DEAD_SECONDS, maxPer1s: s.max_per_1s, distinct: s.unique };
    log(`  dead endpoint: ${fmt(s.received)} requests to the 503 receiver in ${DEAD_SECONDS} s (${fmt(result.perMinute)} a minute, ${fmt(s.unique)} distinct deliveries, most in one second ${fmt(s.max_per_1s)})`);
    return result;
  } finally {
    await node.stop();
    await stopChild(receiver.cp, { group: true });
  }
}

// Phase 4: fairness while a backlog is due -------------------------------------------------

/**
 * Project A's BUSY deliveries all fall due at the start against a receiver answering 503 (its
 * circuit opens, and the rest fail unsent, each a machine step and a write), while project B's
 * batch ingest and its ingest->receipt latency at LATENCY_RATE are measured on the same node.
 */
async function busyPhase() {
  const dir = tempDir('busy');
  const dead = await startReceiver(dir, 503);
  const healthy = await startReceiver(dir, 204);
  const node = await nodeWithWaiting(dir, dead, BUSY, 'BUSY', Date.now());
  try {
    const failedUnsent = () => node.metric('hookline_delivery_attempts_total\\{outcome="circuit_open"\\}');
    return { waiting: BUSY, ...(await projectB(`with ${fmt(BUSY)} of A's due`, node, healthy, { latencyFirst: true, progress: failedUnsent })) };
  } finally {
    await node.stop();
    await stopChild(dead.cp, { group: true });
    await stopChild(healthy.cp, { group: true });
  }
}

// Run, report ------------------------------------------------------------------------------

async function timed(name, results, phase) {
  if (SKIP.has(name)) return;
  log(`phase ${name}`);
  const t0 = performance.now();
  try {
    results[name] = await phase();
  } catch (error) {
    log(`phase ${name} failed: ${error.stack ?? error}`);
    results[name] = { error: String(error.message ?? error) };
  }
  results[name].phaseS = (performance.now() - t0) / 1000;
  log(`  phase ${name} took ${fmt(results[name].phaseS, 1)} s`);
}

function report(results) {
  const { backlog: b, fresh: f, recovery: r, dead: d, busy: u } = results;
  // Measured in rounds taken in turn: the median of the rounds' ratios; else one run each.
  const ratio = b?.ingestRatio ?? (b?.ingest && f?.ingest ? b.ingest.ingestPerS / f.ingest.ingestPerS : NaN);
  const cpuRatio = b?.cpuRatio ?? (b?.ingest && f?.ingest ? b.ingest.cpuMsPerEvent / f.ingest.cpuMsPerEvent : NaN);
  const judge = (value, test) => (Number.isFinite(value) ? (test(value) ? 'met' : 'MISSED') : 'n/a');
  const rows = [
    [`restart with ${fmt(BACKLOG)} waiting: spawn -> /readyz 200`, `<= ${TARGETS.restartS} s`, `${fmt(b?.restartS, 2, ' s')}`, judge(b?.restartS, (v) => v <= TARGETS.restartS)],
    ['RssAnon at rest after the start', `<= ${TARGETS.anonMb} MB`, `${fmt(b?.anonAtStartMb, 1, ' MB')}`, judge(b?.anonAtStartMb, (v) => v <= TARGETS.anonMb)],
    ["RssAnon at rest after B's phases", `<= ${TARGETS.anonMb} MB`, `${fmt(b?.anonAfterMb, 1, ' MB')}`, judge(b?.anonAfterMb, (v) => v <= TARGETS.anonMb)],
    [`B's batch ingest with the backlog / on a fresh node${b?.ingestRounds ? ` (median of ${b.ingestRounds.length} rounds' ratios)` : ''}`, `>= ${TARGETS.ingestRatio}x`, `${fmt(ratio, 2, 'x')} (medians ${fmt(b?.ingest?.ingestPerS)} / ${fmt(f?.ingest?.ingestPerS)} events/s${b?.ingest?.errors ? `; with the backlog the node answered ${JSON.stringify(b.ingest.statuses)}` : ''})`, judge(ratio, (v) => v >= TARGETS.ingestRatio)],
    ["B's CPU per event with the backlog / on a fresh node", 'reported', `${fmt(cpuRatio, 2, 'x')} (${fmt(b?.ingest?.cpuMsPerEvent, 3)} / ${fmt(f?.ingest?.cpuMsPerEvent, 3, ' ms')})`, '-'],
    [`B's p99 ingest->receipt at ${LATENCY_RATE}/s with the backlog (p50, max)`, `<= ${TARGETS.p99Ms} ms`, `${fmt(b?.latency?.p99Ms, 1, ' ms')} (${fmt(b?.latency?.p50Ms, 1)}, ${fmt(b?.latency?.maxMs, 1)}${b?.latency?.errors ? `; ${fmt(b.latency.errors)} of ${fmt(b.latency.events)} refused` : ''})`, b?.latency && !b.latency.accepted ? 'MISSED' : judge(b?.latency?.p99Ms, (v) => v <= TARGETS.p99Ms)],
    [`the same on the fresh node (p50, max)`, 'reported', `${fmt(f?.latency?.p99Ms, 1, ' ms')} (${fmt(f?.latency?.p50Ms, 1)}, ${fmt(f?.latency?.maxMs, 1)})`, '-'],
    [`recovery of ${fmt(RECOVERY)}: most arrivals in one second${r && !r.supported ? ' (no rateLimitPerSecond in this build)' : ''}`, `<= ${TARGETS.recoveryMaxPerS}`, fmt(r?.maxPer1s), judge(r?.maxPer1s, (v) => v <= TARGETS.recoveryMaxPerS)],
    [`recovery of ${fmt(RECOVERY)}: distinct webhook-ids received`, `= ${fmt(RECOVERY)}`, fmt(r?.unique), judge(r?.unique, (v) => v === RECOVERY)],
    [`B's p99 ingest->receipt at ${LATENCY_RATE}/s while ${fmt(BUSY)} of A's fall due at a 503 endpoint (p50, max)`, `<= ${TARGETS.p99Ms} ms`, `${fmt(u?.latency?.p99Ms, 1, ' ms')} (${fmt(u?.latency?.p50Ms, 1)}, ${fmt(u?.latency?.maxMs, 1)})`, judge(u?.latency?.p99Ms, (v) => v <= TARGETS.p99Ms)],
    [`B's CPU per event then / on a fresh node`, 'reported', `${fmt(u?.ingest && f?.ingest ? u.ingest.cpuMsPerEvent / f.ingest.cpuMsPerEvent : NaN, 2, 'x')} (${fmt(u?.ingest?.ingestPerS)} events/s)`, '-'],
    [`dead endpoint, ${fmt(DEAD)} waiting: requests a minute (over ${DEAD_SECONDS} s)`, `< ${TARGETS.deadPerMinute} (at 100,000 waiting)`, fmt(d?.perMinute), judge(d?.perMinute, (v) => v < TARGETS.deadPerMinute)],
  ];
  const lines = ['', `Backlog bench (issue 35), ${new Date().toISOString()}, ${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`, '', '| Figure | Target | This run | Verdict |', '|---|---:|---:|---|'];
  for (const [name, target, value, verdict] of rows) lines.push(`| ${name} | ${target} | ${value} | ${verdict} |`);
  lines.push('');
  for (const [name, phase] of Object.entries(results)) lines.push(`phase ${name}: ${phase.error ? `FAILED (${phase.error.split('\n')[0]})` : 'ran'} in ${fmt(phase.phaseS, 1)} s`);
  console.log(lines.join('\n'));
  return rows.map(([figure, target, value, verdict]) => ({ figure, target, value, verdict }));
}

const results = {};
const startedAt = new Date().toISOString();
await timed('backlog', results, backlogPhase);
await timed('fresh', results, freshPhase);
await timed('recovery', results, recoveryPhase);
await timed('dead', results, deadPhase);
await timed('busy', results, busyPhase);
const summary = report(results);
const settings = { BENCH_ROUNDS: ROUNDS, BENCH_BACKLOG: BACKLOG, BENCH_INGEST_N: INGEST_N, BENCH_LATENCY_RATE: LATENCY_RATE, BENCH_LATENCY_SECONDS: LATENCY_SECONDS, BENCH_SETTLE: SETTLE_S, BENCH_RECOVERY: RECOVERY, BENCH_RECOVERY_DUE: RECOVERY_DUE_S, BENCH_DEAD: DEAD, BENCH_DEAD_SECONDS: DEAD_SECONDS, BENCH_BUSY: BUSY };
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'backlog.json'), `${JSON.stringify({ startedAt, node: process.version, cpus: os.cpus().length, settings, targets: TARGETS, summary, results }, null, 2)}\n`);
const missed = summary.some((row) => row.verdict === 'MISSED') || Object.values(results).some((phase) => phase.error);
process.exit(env.BENCH_STRICT === '1' && missed ? 2 : 0);
