#!/usr/bin/env node
// Issue 35, part 6: a partition takeover with a large backlog (`npm run bench:takeover`). Runs the
// compiled dist/ (build first); every party is a process of its own on 127.0.0.1.
//
// For each stop in BENCH_STOPS (a fresh cluster each, so the survivor never held the partition before):
//   1. cluster: a nats-server of the bench's own (free port, own JetStream store dir), two Hookline
//      nodes (`serve --cluster`, tk-1 and tk-2, fresh LMDB dirs). Project A's webhook is a dead
//      endpoint (http://127.0.0.1:9, nothing listens); the nodes' HOOKLINE_RETRY_SCHEDULE is 0,6h,6h,
//      so each delivery fails its first attempt (refused, then `circuit_open` once the breaker opens)
//      and waits in `retrying`, due 6 h ahead. Project B (no webhook) is on a partition of the other node.
//   2. fill: BENCH_TAKEOVER events of A through POST /v1/events/batch (BENCH_BATCH per request,
//      BENCH_IN_FLIGHT in flight) to A's owner: the real path, every record through the changelog
//      (batches, then the snapshots the owner writes). Then waits until the owner shows them all
//      waiting and its CPU is at rest (snapshots written).
//   3. stop: SIGTERM (`term`: graceful handover) or SIGKILL (`kill`: the lease must expire, BENCH_LEASE)
//      of A's owner. Measured on the survivor, from the stop: A's event POST answered 202 (`api`), a GET
//      of a delivery from the fill 200 (`get`), `hookline_waiting_deliveries` reaching every accepted
//      delivery (`complete`: nothing lost); the old owner's exit (`owner_exit`);
//      the owner's RssAnon after the fill and its peak during it, with the records of its snapshots; the restore's own time and record count (its log line);
//      the survivor's CPU seconds from the stop until at rest, its RssAnon at rest (after BENCH_SETTLE
//      idle seconds) and the highest seen; B's ingest latency (one event per POST at BENCH_B_RATE/s to
//      the survivor, from 2 s before the stop until `complete`).
//
//   npm run build && npm run bench:takeover
//
// Env (defaults in brackets): BENCH_TAKEOVER [1000000] A's waiting deliveries; BENCH_STOPS [term,kill];
//   BENCH_BATCH [1000]; BENCH_IN_FLIGHT [4]; BENCH_EVENT_BYTES [256]; BENCH_LEASE [5s];
//   BENCH_B_RATE [20]; BENCH_SETTLE [5]; HOOKLINE_PARTITIONS [8]; BENCH_PROFILE_DIR (every node runs
//   with --cpu-prof into it); BENCH_NODE_ARGS (more node options); BENCH_KEEP=1 keeps dirs and logs.
//   HOOKLINE_* variables in the environment reach the nodes (e.g. HOOKLINE_DELIVERY_WINDOW).
//   BENCH_STOP_DURING=snapshot: the fill ends and the stop comes as soon as the owner has started its
//   BENCH_STOP_SNAPSHOT-th [2] snapshot of A's partition (a stop that meets a snapshot being written).
// Smoke run: BENCH_TAKEOVER=20000 BENCH_STOPS=term npm run bench:takeover
// Prints each figure as measured, and a JSON line with all of them (also bench/results/takeover.json).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cpuSeconds, eventPadding, freePort, killTree, launch, metricValue, nowMs, num, procMemory, quantile, request, sleep, startNatsServers, stopChild, waitFor } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const TOTAL = num('BENCH_TAKEOVER', 1_000_000);
const STOPS = (env.BENCH_STOPS ?? 'term,kill').split(',').map((s) => s.trim()).filter(Boolean);
const BATCH = num('BENCH_BATCH', 1000);
const IN_FLIGHT = num('BENCH_IN_FLIGHT', 4);
const EVENT_BYTES = num('BENCH_EVENT_BYTES', 256);
const LEASE = env.BENCH_LEASE ?? '5s';
const B_RATE = num('BENCH_B_RATE', 20);
const SETTLE_S = num('BENCH_SETTLE', 5);
const PARTITIONS = num('HOOKLINE_PARTITIONS', 8);
const KEEP = env.BENCH_KEEP === '1';
/** With BENCH_STOP_DURING=snapshot, the fill ends and the stop comes once the owner has started this many snapshots of A's partition. */
const STOP_DURING_SNAPSHOT = env.BENCH_STOP_DURING === 'snapshot' ? num('BENCH_STOP_SNAPSHOT', 2) : 0;
const SERVE_JS = path.join(root, 'dist', 'cli', 'main.js');
const ADMIN_KEY = 'hk_bench_takeover_admin';
const DEAD_URL = 'http://127.0.0.1:9/dead';
const NODE_ARGS = [...(env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE_DIR)}`] : []), ...(env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
const log = (line) => process.stderr.write(`[takeover ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const s = (ms) => (ms / 1000).toFixed(2);

const { partitionOf } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'partition.js')).href);
const children = new Set();
const tempDirs = new Set();
process.on('exit', () => {
  for (const cp of children) killTree(cp, 'SIGKILL');
  if (KEEP) process.stderr.write(`bench:takeover kept ${[...tempDirs].join(' ')}\n`);
  else for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130));

const api = (node, method, url, options = {}) => request(method, `${node.url}${url}`, { timeoutMs: 30_000, ...options });

/** A node's answer as status and body, never a throw (a 503 while the partition moves is an answer). */
async function answer(node, method, url, { key, body } = {}) {
  try {
    const res = await fetch(`${node.url}${url}`, { method, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    return { status: res.status, body: text };
  } catch (error) {
    return { status: 0, body: String(error) };
  }
}

async function startNode(dir, natsUrl, nodeId) {
  const port = await freePort();
  const logFile = path.join(dir, `${nodeId}.log`);
  const cp = launch(process.execPath, [...NODE_ARGS, SERVE_JS, 'serve', '--cluster'], {
    cwd: root,
    logFile,
    children,
    detached: true,
    extraEnv: {
      HOOKLINE_NODE_ID: nodeId, HOOKLINE_PORT: String(port), HOOKLINE_HOST: '127.0.0.1', HOOKLINE_DATA_DIR: path.join(dir, nodeId), HOOKLINE_NATS_URL: natsUrl,
      HOOKLINE_PARTITIONS: String(PARTITIONS), HOOKLINE_LEASE_TTL: LEASE, HOOKLINE_ADMIN_KEY: ADMIN_KEY, HOOKLINE_API_KEY: `hk_bench_takeover_${nodeId}`,
      HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1', HOOKLINE_RATE_LIMIT: '0', HOOKLINE_RETRY_SCHEDULE: '0,6h,6h', HOOKLINE_LOG_LEVEL: env.HOOKLINE_LOG_LEVEL ?? 'info',
    },
  });
  const node = { nodeId, url: `http://127.0.0.1:${port}`, cp, logFile };
  await waitFor(`${nodeId} serving`, () => api(node, 'GET', '/healthz'), { timeoutMs: 60_000, child: cp, showLastError: true });
  return node;
}

const waitingOn = async (node) => metricValue(await api(node, 'GET', '/metrics', { parse: 'auto' }), 'hookline_waiting_deliveries');

/** Waits until `pid` uses under 5% of a core over a second: what "at rest" means here. */
async function atRest(pid, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  for (let before = cpuSeconds(pid); Date.now() < deadline; ) {
    await sleep(1000);
    const after = cpuSeconds(pid);
    if (after - before < 0.05) return;
    before = after;
  }
  throw new Error(`process ${pid} not at rest within ${timeoutMs} ms`);
}

/** Log records of a node whose msg matches. */
const logRecords = (node, msg) => readFileSync(node.logFile, 'utf8').split('\n').filter((l) => l.includes(msg)).map((l) => JSON.parse(l));

async function fill(owner, project) {
  let checkedAt = 0;
  let snapshotStarted = false;
  // Read at most twice a second: the owner's log, for the snapshot to stop during.
  const stopNow = () => {
    if (!STOP_DURING_SNAPSHOT || snapshotStarted || nowMs() - checkedAt < 500) return snapshotStarted;
    checkedAt = nowMs();
    snapshotStarted = logRecords(owner, 'partition changelog snapshot started').length >= STOP_DURING_SNAPSHOT;
    return snapshotStarted;
  };
  const pad = eventPadding(EVENT_BYTES);
  const t0 = nowMs();
  let next = 0;
  let accepted = 0;
  let sampleDeliveryId = null;
  const worker = async () => {
    while (next < TOTAL && !stopNow()) {
      const from = next;
      next = Math.min(TOTAL, next + BATCH);
      const events = [];
      for (let n = from; n < next; n++) events.push({ id: `evt_fill_${n}`, type: 'service.trigger.event', data: { n, pad } });
      for (let attempt = 0; ; attempt++) {
        const res = await answer(owner, 'POST', '/v1/events/batch', { key: project.apiKey, body: { events } });
        if (res.status === 202) {
          const data = JSON.parse(res.body).data;
          accepted += data.length;
          sampleDeliveryId ??= data[0].deliveryId;
          break;
        }
        if (attempt > 50) throw new Error(`fill: batch at ${from} refused: ${res.status} ${res.body.slice(0, 300)}`);
        await sleep(200);
      }
      if (Math.floor(accepted / 100_000) !== Math.floor((accepted - (next - from)) / 100_000)) log(`fill: ${accepted} accepted (${Math.round(accepted / ((nowMs() - t0) / 1000))}/s)`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const fillS = (nowMs() - t0) / 1000;
  await waitFor('every delivery of the fill waiting', async () => (await waitingOn(owner)) >= accepted, { timeoutMs: 600_000, intervalMs: 500 });
  if (snapshotStarted) log(`fill: stopped at ${accepted}: the owner started snapshot ${STOP_DURING_SNAPSHOT} of A's partition`);
  else await atRest(owner.cp.pid);
  log(`fill: ${accepted} events of A accepted in ${fillS.toFixed(1)} s (${Math.round(accepted / fillS)}/s); the owner shows them waiting and is at rest`);
  return { accepted, fillS, sampleDeliveryId };
}

/** Project B's ingest on the survivor, one event per POST at B_RATE/s, until `stop()`. */
function ingestB(survivor, project) {
  const latencies = [];
  let failed = 0;
  let stopped = false;
  const done = (async () => {
    for (let n = 0; !stopped; n++) {
      const t = nowMs();
      void answer(survivor, 'POST', '/v1/events', { key: project.apiKey, body: { id: `evt_b_${n}`, type: 'service.trigger.event', data: { n } } }).then((res) => {
        if (res.status === 202) latencies.push(nowMs() - t);
        else failed++;
      });
      await sleep(Math.max(0, t + 1000 / B_RATE - nowMs()));
    }
    await sleep(2000);
  })();
  return async () => {
    stopped = true;
    await done;
    const sorted = latencies.sort((a, b) => a - b);
    return { sent: sorted.length + failed, failed, p50_ms: quantile(sorted, 0.5, 1), p99_ms: quantile(sorted, 0.99, 1), max_ms: sorted.length ? Number(sorted.at(-1).toFixed(1)) : null };
  };
}

async function run(stop) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-takeover-${stop}-`));
  tempDirs.add(dir);
  const natsDir = path.join(dir, 'nats');
  mkdirSync(natsDir);
  const nats = await startNatsServers(1, natsDir, children);
  const nodes = [await startNode(dir, nats.url, 'tk-1'), await startNode(dir, nats.url, 'tk-2')];
  try {
    const owners = async () => {
      const map = new Map();
      for (const node of nodes) for (const partition of (await api(node, 'GET', '/healthz')).cluster.partitions) map.set(partition, node);
      return map.size === PARTITIONS && new Set(map.values()).size === 2 ? map : null;
    };
    const ownerOf = await waitFor('partitions spread over both nodes', owners, { timeoutMs: 60_000, intervalMs: 200 });
    const a = await api(nodes[0], 'POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'takeover-a' } });
    const owner = ownerOf.get(partitionOf(a.projectId, PARTITIONS));
    const survivor = nodes.find((node) => node !== owner);
    await api(owner, 'PUT', '/v1/webhook', { key: a.apiKey, body: { callbackUrl: DEAD_URL, status: 'active', eventTypes: ['service.trigger.event'] } });
    let b;
    do b = await api(survivor, 'POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'takeover-b' } });
    while (ownerOf.get(partitionOf(b.projectId, PARTITIONS)) !== survivor);
    log(`${stop}: A (partition ${partitionOf(a.projectId, PARTITIONS)}) on ${owner.nodeId}, B on ${survivor.nodeId}; filling ${TOTAL}`);
    // The owner's memory while it takes the fill and writes its snapshots of the partition.
    let ownerPeakAnonMb = 0;
    const sampleOwner = setInterval(() => (ownerPeakAnonMb = Math.max(ownerPeakAnonMb, procMemory(owner.cp.pid).anonMb)), 500);
    const { accepted, fillS, sampleDeliveryId } = await fill(owner, a).finally(() => clearInterval(sampleOwner));
    const ownerAnonMb = procMemory(owner.cp.pid).anonMb;
    const ownerSnapshots = logRecords(owner, 'partition changelog snapshot written').map((line) => line.records);
    log(`${stop}: owner RssAnon ${ownerAnonMb.toFixed(1)} MB at rest after the fill (peak ${ownerPeakAnonMb.toFixed(1)}); its snapshots: ${ownerSnapshots.join(', ')} records`);
    await atRest(survivor.cp.pid);
    const stopB = ingestB(survivor, b);
    await sleep(2000);
    const cpuBefore = cpuSeconds(survivor.cp.pid);
    const anonBefore = procMemory(survivor.cp.pid).anonMb;
    let peakAnonMb = anonBefore;
    const stoppedAt = nowMs();
    // How long the stopped owner takes to exit (a graceful stop's handover, its last snapshot).
    const ownerExited = new Promise((resolve) => (owner.cp.exitCode !== null ? resolve(0) : owner.cp.once('exit', () => resolve(nowMs() - stoppedAt))));
    killTree(owner.cp, stop === 'kill' ? 'SIGKILL' : 'SIGTERM');
    const since = () => nowMs() - stoppedAt;
    // A probe every 50 ms, none waiting for the one before: one forwarded to the stopping owner may
    // hang until the forward's timeout, and the first 202 is what a retrying client gets.
    let probes = 0;
    let apiMs = 0;
    const inFlight = new Set();
    for (let n = 0; apiMs === 0; n++) {
      if (since() > 600_000 || survivor.cp.exitCode !== null) throw new Error('A not served by the survivor within 600 s');
      peakAnonMb = Math.max(peakAnonMb, procMemory(survivor.cp.pid).anonMb);
      const probe = answer(survivor, 'POST', '/v1/events', { key: a.apiKey, body: { id: `evt_probe_${n}`, type: 'service.trigger.event', data: {} } }).then((res) => {
        inFlight.delete(probe);
        if (res.status !== 202) return;
        probes++;
        apiMs ||= since();
      });
      inFlight.add(probe);
      await sleep(50);
    }
    const getMs = await waitFor('a delivery of the fill readable', async () => (await answer(survivor, 'GET', `/v1/logs/webhook-deliveries/${sampleDeliveryId}`, { key: a.apiKey })).status === 200 && since(), { timeoutMs: 600_000, intervalMs: 20 });
    let waiting = 0;
    const completeMs = await waitFor('every waiting delivery counted', async () => {
      peakAnonMb = Math.max(peakAnonMb, procMemory(survivor.cp.pid).anonMb);
      waiting = await waitingOn(survivor);
      return waiting >= accepted + probes && since();
    }, { timeoutMs: 600_000, intervalMs: 20 });
    const b_ingest = await stopB();
    const ownerExitMs = await ownerExited;
    await Promise.all(inFlight);
    const expected = accepted + probes;
    await atRest(survivor.cp.pid);
    const cpuS = cpuSeconds(survivor.cp.pid) - cpuBefore;
    await sleep(SETTLE_S * 1000);
    const memory = procMemory(survivor.cp.pid);
    waiting = await waitingOn(survivor);
    const restored = logRecords(survivor, 'partition restored from the changelog').filter((line) => line.partition === partitionOf(a.projectId, PARTITIONS)).at(-1) ?? {};
    const result = {
      stop, waiting_deliveries: accepted, fill_s: Number(fillS.toFixed(1)), api_s: Number(s(apiMs)), get_s: Number(s(getMs)), complete_s: Number(s(completeMs)), owner_exit_s: Number(s(ownerExitMs)), owner_anon_mb_after_fill: Number(ownerAnonMb.toFixed(1)), owner_peak_anon_mb_fill: Number(ownerPeakAnonMb.toFixed(1)), owner_snapshot_records: ownerSnapshots,
      restore_s: restored.ms !== undefined ? Number(s(restored.ms)) : null, restored_records: restored.restored ?? null,
      survivor_cpu_s: Number(cpuS.toFixed(2)), anon_mb_before: Number(anonBefore.toFixed(1)), anon_mb_at_rest: Number(memory.anonMb.toFixed(1)), peak_anon_mb: Number(peakAnonMb.toFixed(1)),
      waiting_after: waiting, expected, lost: Math.max(0, expected - waiting), b_ingest, load_average: os.loadavg().map((x) => Number(x.toFixed(2))),
    };
    log(`${stop}: stop -> A's POST 202 ${s(apiMs)} s, GET of a delivery ${s(getMs)} s, waiting ${waiting}/${expected} ${s(completeMs)} s; old owner exited ${s(ownerExitMs)} s; restore ${result.restore_s} s (${result.restored_records} records); survivor CPU ${result.survivor_cpu_s} s, RssAnon ${result.anon_mb_before} -> ${result.anon_mb_at_rest} MB at rest (peak ${result.peak_anon_mb}); B: p50 ${b_ingest.p50_ms} ms, p99 ${b_ingest.p99_ms} ms, max ${b_ingest.max_ms} ms, ${b_ingest.failed} of ${b_ingest.sent} failed`);
    return result;
  } finally {
    await Promise.all(nodes.map((node) => stopChild(node.cp, { timeoutMs: 60_000, group: true })));
    await nats.stop();
  }
}

const results = { bench: 'takeover', total: TOTAL, partitions: PARTITIONS, lease: LEASE, cpus: os.cpus().length, date: new Date().toISOString(), runs: [] };
for (const stop of STOPS) results.runs.push(await run(stop));
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'takeover.json'), `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(results)}\n`);
process.exit(results.runs.every((run) => run.lost === 0) ? 0 : 2);
