// Cluster bench (`npm run bench:cluster`): delivered events/s with 1, 2 and 3 Hookline nodes in
// cluster mode on this machine, and the failover time from kill -9 of a busy partition's owner to
// the first delivery by its new owner. It builds nothing: it runs the compiled `dist/` (run
// `npx tsc -p tsconfig.build.json` first).
//
// Parties, each a process of its own on 127.0.0.1: the nodes (`node dist/cli/main.js serve --cluster`,
// a fresh LMDB dir each, one shared NATS), a 204 receiver, and a producer: `publisher` (the SDK's
// publishEvent with `partitions`, IN_FLIGHT publishes awaiting their JetStream ack) or `loadgen`
// (undici Pools POSTing /v1/events to every node in turn, CONCURRENCY in flight). This file is all
// of them: `node bench/cluster.mjs receiver|publisher|loadgen` runs one party.
//
// Scenarios, each on a fresh cluster (its own stream, subjects, durables, KV buckets; deleted after):
//   throughput  for each node count in BENCH_NODES (1,2,3) and each path in BENCH_PATHS (nats,http):
//               BENCH_PROJECTS projects (64) hashed over HOOKLINE_PARTITIONS (64), BENCH_WARMUP
//               events first (untimed), then BENCH_N events (10,000) of ~1 KB as fast as the producer
//               goes; figure = N / (last receipt - first send), and the nodes' CPU time per event
//               (from /proc, all nodes together, over the measured events).
//   failover    3 nodes, events over NATS at BENCH_FAILOVER_RATE/s (300), for each lease in
//               BENCH_LEASES (2s,5s): once steady, kill -9 the owner of the partition of project 0;
//               figures: kill -> first receipt of an event of any partition the dead node owned
//               (necessarily sent by its new owner), kill -> every partition served again (healthz),
//               and that every published event is delivered, counting repeats.
//   replicas    (issue 13) the same throughput run, NATS path, BENCH_REPLICA_NODES (3) Hookline nodes,
//               on NATS servers the bench starts itself (nats-server, own ports and stores): a
//               three-server NATS cluster with HOOKLINE_NATS_REPLICAS=3 against one server with
//               replicas 1; figures: events/s, Hookline CPU per event and NATS servers' CPU per event.
//
// Env: BENCH_NATS_URL (nats://127.0.0.1:4222), BENCH_NODES (1,2,3), BENCH_PATHS (nats,http), BENCH_N
//      (10000), BENCH_WARMUP (1000), BENCH_PROJECTS (64), BENCH_IN_FLIGHT (256), BENCH_CONCURRENCY
//      (64), BENCH_FAILOVER_RATE (300), BENCH_LEASES (2s,5s), BENCH_SKIP (throughput,failover,replicas),
//      BENCH_REPLICA_NODES (3),
//      BENCH_LEASE (5s: the throughput runs' HOOKLINE_LEASE_TTL; a short one overloads the leases),
//      BENCH_KEEP=1 (keep temp dirs with each node's log and, on the shared NATS, the streams),
//      BENCH_PROFILE_DIR (run every node with --cpu-prof, profiles into that dir), BENCH_PERF_DIR
//      (`perf record` the first node of each throughput run, summed by engine/perf-summary.mjs; needs
//      Debian's linux-perf), BENCH_NODE_ARGS
//      (more node options for every node, e.g. "--trace-gc"; their output goes to the node's log). HOOKLINE_* variables reach the nodes.
// Smoke run: BENCH_N=1000 BENCH_WARMUP=200 BENCH_NODES=1,2 BENCH_LEASES=2s npm run bench:cluster
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PERF_NODE_ARGS, countReceipt, startNatsServers, cpuSeconds, drive, freePort, launch as launchChild, listenReceiver, nowMs, num, request as requestWith, sleep, startPerfRecording, stopChild, waitFor as waitForWith } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const list = (name, fallback) => (env[name] ?? fallback).split(',').map((s) => s.trim()).filter(Boolean);
const EVENT_BYTES = 1024;
const PAD = 'x'.repeat(EVENT_BYTES - 330);

// Party: JetStream publisher (partitioned subjects) -----------------------------------------------

async function publisherMain() {
  const { connect } = await import('@nats-io/transport-node');
  const { publishEvent } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'nats.js')).href);
  const projects = JSON.parse(readFileSync(env.PROJECTS_FILE, 'utf8'));
  const n = env.N === 'Infinity' ? Infinity : Number(env.N);
  const nc = await connect({ servers: env.NATS_URL.split(','), name: 'hookline-bench-publisher' });
  let stop = false;
  process.on('SIGTERM', () => (stop = true));
  let accepted = 0;
  let errors = 0;
  const firstSendAt = nowMs();
  await drive(n, Number(env.RATE || 0), Number(env.IN_FLIGHT || 256), async (seq) => {
    const project = projects[seq % projects.length];
    const event = { id: `evt_${env.TAG}_${seq}`, type: 'service.trigger.event', data: { sentAt: Number(nowMs().toFixed(3)), seq, projectId: project.projectId, pad: PAD } };
    // Retried until acked (same id: JetStream drops a repeat), so every event is published once.
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        await publishEvent(nc, project.projectId, event, { subjectPrefix: env.PREFIX, partitions: Number(env.PARTITIONS), timeoutMs: 3000 });
        accepted++;
        return;
      } catch {
        errors++;
        await sleep(50);
      }
    }
  }, { until: () => stop, minSleepMs: 1 });
  await nc.drain();
  process.stdout.write(`${JSON.stringify({ accepted, errors, first_send_at: firstSendAt })}\n`);
}

// Party: HTTP load generator, POSTs spread over every node ----------------------------------------

async function loadgenMain() {
  const { Pool } = await import('undici');
  const projects = JSON.parse(readFileSync(env.PROJECTS_FILE, 'utf8'));
  const targets = env.TARGETS.split(',');
  const concurrency = Number(env.CONCURRENCY || 64);
  const pools = targets.map((target) => new Pool(target, { connections: Math.ceil(concurrency / targets.length), pipelining: 1 }));
  let accepted = 0;
  let errors = 0;
  const firstSendAt = nowMs();
  await drive(Number(env.N), 0, concurrency, async (seq) => {
    const project = projects[seq % projects.length];
    const body = `{"id":"evt_${env.TAG}_${seq}","type":"service.trigger.event","data":{"sentAt":${nowMs().toFixed(3)},"seq":${seq},"projectId":"${project.projectId}","pad":"${PAD}"}}`;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${project.apiKey}` };
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const res = await pools[seq % pools.length].request({ method: 'POST', path: '/v1/events', headers, body });
        await res.body.text();
        if (res.statusCode === 202 || res.statusCode === 200) {
          accepted++;
          return;
        }
      } catch {
        // retried below
      }
      errors++;
      await sleep(50);
    }
  });
  await Promise.all(pools.map((pool) => pool.close()));
  process.stdout.write(`${JSON.stringify({ accepted, errors, first_send_at: firstSendAt })}\n`);
}

// Party: 204 receiver -----------------------------------------------------------------------------

async function receiverMain() {
  let s;
  const reset = () => (s = { received: 0, firstAt: 0, lastAt: 0, ids: new Set(), duplicates: 0, byProject: [] });
  reset();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: s.received, unique: s.ids.size, duplicates: s.duplicates, first_at: s.firstAt, last_at: s.lastAt }));
      return;
    }
    if (url.pathname === '/missing') {
      // Ids evt_<tag>_0 .. evt_<tag>_<n-1> not received yet: names the events a stuck run lost.
      const tag = url.searchParams.get('tag');
      const missing = [];
      for (let seq = 0; seq < Number(url.searchParams.get('n')) && missing.length < 100; seq++) if (!s.ids.has(`evt_${tag}_${seq}`)) missing.push(`evt_${tag}_${seq}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ missing }));
      return;
    }
    if (url.pathname === '/first-after') {
      // First receipt after `t` of an event of one of `projects`.
      const after = Number(url.searchParams.get('t'));
      const projects = new Set(url.searchParams.get('projects').split(','));
      const hit = s.byProject.find(([at, projectId]) => at > after && projects.has(projectId));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ at: hit ? hit[0] : null }));
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const t = nowMs();
      if (url.pathname === '/reset') {
        reset();
        res.writeHead(204).end();
        return;
      }
      const text = Buffer.concat(chunks).toString('latin1');
      countReceipt(s, text, t);
      if (env.TRACK === '1') s.byProject.push([t, /"projectId":"([^"]+)"/.exec(text)?.[1]]);
      res.writeHead(204).end();
    });
  });
  listenReceiver(server, Number(env.PORT));
}

// Orchestration ----------------------------------------------------------------------------------

const SERVE_JS = path.join(root, 'dist', 'cli', 'main.js');
const NATS_URL = env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const NODE_COUNTS = list('BENCH_NODES', '1,2,3').map(Number);
const PATHS = list('BENCH_PATHS', 'nats,http');
const N = num('BENCH_N', 10_000);
const WARMUP = num('BENCH_WARMUP', 1000);
const PROJECTS = num('BENCH_PROJECTS', 64);
const PARTITIONS = num('HOOKLINE_PARTITIONS', 64);
const IN_FLIGHT = num('BENCH_IN_FLIGHT', 256);
const CONCURRENCY = num('BENCH_CONCURRENCY', 64);
const FAILOVER_RATE = num('BENCH_FAILOVER_RATE', 300);
const LEASES = list('BENCH_LEASES', '2s,5s');
const THROUGHPUT_LEASE = env.BENCH_LEASE ?? '5s';
const SKIP = new Set(list('BENCH_SKIP', ''));
const KEEP = env.BENCH_KEEP === '1';
const PROFILE_ARGS = [
  ...(env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE_DIR)}`] : []),
  ...(env.BENCH_PERF_DIR ? PERF_NODE_ARGS : []),
  ...(env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
];
const ADMIN_KEY = `bench_admin_${randomBytes(8).toString('hex')}`;
const log = (...parts) => process.stderr.write(`[bench:cluster ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

const children = new Set();
const tempDirs = new Set();
let nc = null;

function launch(args, { extraEnv = {}, logFile = null } = {}) {
  return launchChild(process.execPath, args, { cwd: root, extraEnv, logFile, children });
}

/** The shared request helper with this bench's 15 s timeout. */
const request = (method, url, options = {}) => requestWith(method, url, { timeoutMs: 15_000, ...options });

/** The shared waitFor; a timeout names the last error the check threw. */
const waitFor = (what, check, options) => waitForWith(what, check, { ...options, showLastError: true });

/** A fresh cluster of `count` nodes with a receiver and BENCH_PROJECTS configured projects. */
async function startCluster(label, count, lease, { natsUrl = NATS_URL, nodeEnv = {} } = {}) {
  const suffix = randomBytes(4).toString('hex');
  const names = { stream: `HL_BENCH_${suffix}`, prefix: `hlbench.${suffix}.events`, durable: `bench_${suffix}`, cluster: `hlbench.${suffix}.cluster` };
  const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-bench-cluster-${label}-`));
  tempDirs.add(dir);
  const receiverPort = await freePort();
  const receiver = launch([fileURLToPath(import.meta.url), 'receiver'], { extraEnv: { PORT: String(receiverPort), TRACK: label.startsWith('failover') ? '1' : '0' }, logFile: path.join(dir, 'receiver.log') });
  const receiverUrl = `http://127.0.0.1:${receiverPort}`;
  await waitFor('receiver up', () => request('GET', `${receiverUrl}/stats`), { timeoutMs: 10_000 });
  const nodes = [];
  const startNode = async (i) => {
    const port = await freePort();
    const nodeId = `bench-${i}`;
    const cp = launch([...PROFILE_ARGS, SERVE_JS, 'serve', '--cluster'], {
      logFile: path.join(dir, `${nodeId}.log`),
      extraEnv: {
        HOOKLINE_NODE_ID: nodeId,
        HOOKLINE_PORT: String(port),
        HOOKLINE_DATA_DIR: path.join(dir, nodeId),
        HOOKLINE_NATS_URL: natsUrl,
        HOOKLINE_NATS_STREAM: names.stream,
        HOOKLINE_NATS_SUBJECT_PREFIX: names.prefix,
        HOOKLINE_NATS_DURABLE: names.durable,
        HOOKLINE_CLUSTER_SUBJECT_PREFIX: names.cluster,
        HOOKLINE_PARTITIONS: String(PARTITIONS),
        HOOKLINE_LEASE_TTL: lease,
        HOOKLINE_ADMIN_KEY: ADMIN_KEY,
        HOOKLINE_API_KEY: `bench_default_${suffix}`,
        HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
        HOOKLINE_RATE_LIMIT: '0',
        HOOKLINE_LOG_LEVEL: env.HOOKLINE_LOG_LEVEL ?? 'warn',
        ...nodeEnv,
      },
    });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${nodeId} serving`, () => request('GET', `${url}/healthz`), { timeoutMs: 30_000 });
    nodes.push({ nodeId, url, cp });
  };
  for (let i = 0; i < count; i++) await startNode(i);
  const owners = async () => {
    const map = new Map();
    for (const node of nodes.filter((n) => n.cp.exitCode === null && n.cp.signalCode === null)) {
      for (const partition of (await request('GET', `${node.url}/healthz`)).cluster.partitions) {
        if (map.has(partition)) return null;
        map.set(partition, node.nodeId);
      }
    }
    return map;
  };
  const balanced = async (live) => {
    const map = await owners();
    return map && map.size === PARTITIONS && new Set(map.values()).size === live ? map : null;
  };
  await waitFor('partitions spread over the nodes', () => balanced(count), { timeoutMs: 60_000, intervalMs: 100 });
  const projects = [];
  for (let i = 0; i < PROJECTS; i++) {
    const project = await request('POST', `${nodes[i % count].url}/admin/v1/projects`, { key: ADMIN_KEY, body: { name: `bench-${i}` } });
    await request('PUT', `${nodes[(i + 1) % count].url}/v1/webhook`, { key: project.apiKey, body: { callbackUrl: `${receiverUrl}/hooks`, status: 'active', eventTypes: ['service.trigger.event'] } });
    projects.push(project);
  }
  const projectsFile = path.join(dir, 'projects.json');
  writeFileSync(projectsFile, JSON.stringify(projects));
  const stats = () => request('GET', `${receiverUrl}/stats`);
  const dispose = async () => {
    await Promise.all(nodes.map((node) => stopChild(node.cp)));
    await stopChild(receiver);
    if (natsUrl !== NATS_URL || KEEP) return; // its own NATS servers go with their stores; BENCH_KEEP keeps the streams
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const jsm = await jetstreamManager(nc);
    for (const stream of [names.stream, `${names.stream}_CHANGELOG`, `KV_${names.stream}_directory`, `KV_${names.stream}_leases`]) await jsm.streams.delete(stream).catch(() => {});
  };
  return { names, natsUrl, nodes, projects, projectsFile, receiverUrl, stats, owners, balanced, dispose };
}

/** Sends `n` events through `kind` (nats|http), waits until the receiver has them all; the producer's report. */
async function produce(cluster, kind, n, tag, { rate = 0, timeoutMs = 300_000 } = {}) {
  const common = { PROJECTS_FILE: cluster.projectsFile, N: String(n), TAG: tag };
  const producer =
    kind === 'nats'
      ? launch([fileURLToPath(import.meta.url), 'publisher'], { extraEnv: { ...common, NATS_URL: cluster.natsUrl, PREFIX: cluster.names.prefix, PARTITIONS: String(PARTITIONS), IN_FLIGHT: String(IN_FLIGHT), RATE: String(rate) } })
      : launch([fileURLToPath(import.meta.url), 'loadgen'], { extraEnv: { ...common, TARGETS: cluster.nodes.map((node) => node.url).join(','), CONCURRENCY: String(CONCURRENCY) } });
  const { code } = await producer.exited;
  if (code !== 0) throw new Error(`${kind} producer failed: ${producer.output()}`);
  const report = JSON.parse(producer.output().trim().split('\n').pop());
  if (report.accepted !== n) throw new Error(`${kind} producer: ${report.accepted} of ${n} accepted`);
  try {
    await waitFor(`${n} events delivered`, async () => (await cluster.stats()).unique >= n, { timeoutMs, intervalMs: 100 });
  } catch (error) {
    const { missing } = await request('GET', `${cluster.receiverUrl}/missing?tag=${tag}&n=${n}`);
    log(`not delivered (first ${missing.length}): ${missing.join(' ')}${KEEP ? `; streams kept: ${cluster.names.stream}` : ''}`);
    throw error;
  }
  return report;
}

async function throughput(count, kind, { label = `${kind}-${count}`, clusterOptions = {}, natsPids = [] } = {}) {
  const cluster = await startCluster(label, count, THROUGHPUT_LEASE, clusterOptions);
  try {
    if (WARMUP > 0) await produce(cluster, kind, WARMUP, `warm${count}${kind}`);
    await request('POST', `${cluster.receiverUrl}/reset`);
    const load = os.loadavg()[0];
    const nodesCpu = () => cluster.nodes.reduce((sum, node) => sum + cpuSeconds(node.cp.pid), 0);
    const natsCpu = () => natsPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const cpuBefore = nodesCpu();
    const natsCpuBefore = natsCpu();
    const recording = env.BENCH_PERF_DIR ? startPerfRecording(cluster.nodes[0].cp.pid, path.resolve(env.BENCH_PERF_DIR), `${label}-node1`) : null;
    const report = await produce(cluster, kind, N, `run${count}${kind}`);
    if (recording) log(await recording.stop());
    const cpuMsPerEvent = ((nodesCpu() - cpuBefore) * 1000) / N;
    const natsCpuMsPerEvent = ((natsCpu() - natsCpuBefore) * 1000) / N;
    const stats = await cluster.stats();
    const seconds = (stats.last_at - report.first_send_at) / 1000;
    const perS = Math.round(N / seconds);
    const natsPart = natsPids.length > 0 ? `, NATS servers' CPU ${natsCpuMsPerEvent.toFixed(2)} ms/event` : '';
    log(`${label}: ${count} node(s), ${kind}: ${perS} events/s (${N} in ${seconds.toFixed(2)} s), Hookline CPU ${cpuMsPerEvent.toFixed(2)} ms/event${natsPart}, duplicates ${stats.duplicates}, load ${load.toFixed(1)}`);
    return {
      nodes: count,
      path: kind,
      per_s: perS,
      seconds: Number(seconds.toFixed(2)),
      hookline_cpu_ms_per_event: Number(cpuMsPerEvent.toFixed(3)),
      ...(natsPids.length > 0 ? { nats_cpu_ms_per_event: Number(natsCpuMsPerEvent.toFixed(3)) } : {}),
      duplicates: stats.duplicates,
      producer_errors: report.errors,
      load_average_1m: Number(load.toFixed(2)),
    };
  } finally {
    await cluster.dispose();
  }
}

async function failover(lease) {
  const cluster = await startCluster(`failover-${lease}`, 3, lease);
  try {
    const busy = cluster.projects[0];
    const { partitionOf } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'partition.js')).href);
    const owners = await cluster.owners();
    const victimId = owners.get(partitionOf(busy.projectId, PARTITIONS));
    const victim = cluster.nodes.find((node) => node.nodeId === victimId);
    const victimProjects = cluster.projects.filter((project) => owners.get(partitionOf(project.projectId, PARTITIONS)) === victimId).map((project) => project.projectId);
    // Open loop until stopped: the publisher runs on through the kill and the takeover.
    const producer = launch([fileURLToPath(import.meta.url), 'publisher'], {
      extraEnv: { PROJECTS_FILE: cluster.projectsFile, N: 'Infinity', TAG: `fail${lease}`, NATS_URL, PREFIX: cluster.names.prefix, PARTITIONS: String(PARTITIONS), IN_FLIGHT: '64', RATE: String(FAILOVER_RATE) },
    });
    await waitFor('steady deliveries', async () => (await cluster.stats()).unique >= FAILOVER_RATE * 3, { timeoutMs: 60_000, intervalMs: 100 });
    const killedAt = nowMs();
    victim.cp.kill('SIGKILL');
    await victim.cp.exited;
    const first = await waitFor('first delivery by a new owner', async () => (await request('GET', `${cluster.receiverUrl}/first-after?t=${killedAt + 100}&projects=${victimProjects.join(',')}`)).at, { timeoutMs: 60_000, intervalMs: 20 });
    await waitFor('every partition served again', () => cluster.balanced(2), { timeoutMs: 60_000, intervalMs: 50 });
    const servedAgainMs = nowMs() - killedAt;
    await sleep(2000);
    producer.kill('SIGTERM');
    await producer.exited;
    const report = JSON.parse(producer.output().trim().split('\n').pop());
    await waitFor('every published event delivered', async () => (await cluster.stats()).unique >= report.accepted, { timeoutMs: 120_000, intervalMs: 100 });
    const stats = await cluster.stats();
    const firstMs = Math.round(first - killedAt);
    log(`failover, lease ${lease}: first delivery by a new owner ${firstMs} ms after kill -9; all ${PARTITIONS} partitions served again within ${Math.round(servedAgainMs)} ms; ${report.accepted} published, ${stats.unique} delivered, ${stats.duplicates} duplicate receipts`);
    return { lease, first_delivery_ms: firstMs, partitions_served_again_ms: Math.round(servedAgainMs), victim_partitions: [...owners.values()].filter((owner) => owner === victimId).length, published: report.accepted, delivered: stats.unique, duplicates: stats.duplicates };
  } finally {
    await cluster.dispose();
  }
}

/** Replicas 3 on a three-server NATS cluster against replicas 1 on one server, same load. */
async function replicas() {
  const rows = [];
  const nodes = num('BENCH_REPLICA_NODES', 3);
  for (const [size, replicaCount] of [[1, 1], [3, 3]]) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `hookline-bench-nats${size}-`));
    tempDirs.add(dir);
    const nats = await startNatsServers(size, dir, children);
    try {
      const row = await throughput(nodes, 'nats', { label: `${size}-server NATS, replicas ${replicaCount}`, natsPids: nats.pids, clusterOptions: { natsUrl: nats.url, nodeEnv: { HOOKLINE_NATS_REPLICAS: String(replicaCount) } } });
      rows.push({ nats_servers: size, replicas: replicaCount, ...row });
    } finally {
      await nats.stop();
    }
  }
  return rows;
}

async function main() {
  const party = process.argv[2];
  if (party === 'receiver') return receiverMain();
  if (party === 'publisher') return publisherMain();
  if (party === 'loadgen') return loadgenMain();
  const { connect } = await import('@nats-io/transport-node');
  nc = await connect({ servers: NATS_URL, name: 'hookline-bench-cluster' });
  const results = { bench: 'cluster', n: N, warmup: WARMUP, projects: PROJECTS, partitions: PARTITIONS, in_flight: IN_FLIGHT, concurrency: CONCURRENCY, cpus: os.cpus().length, throughput: [], failover: [], replicas: [] };
  const cleanup = async () => {
    for (const cp of children) cp.kill('SIGKILL');
    if (!KEEP) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    else log(`kept: ${[...tempDirs].join(' ')}`);
  };
  try {
    if (!SKIP.has('throughput')) for (const count of NODE_COUNTS) for (const kind of PATHS) results.throughput.push(await throughput(count, kind));
    if (!SKIP.has('failover')) for (const lease of LEASES) results.failover.push(await failover(lease));
    if (!SKIP.has('replicas')) results.replicas = await replicas();
  } finally {
    await cleanup();
    await nc.close();
  }
  results.load_average = os.loadavg().map((value) => Number(value.toFixed(2)));
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  for (const cp of children) cp.kill('SIGKILL');
  process.exit(1);
});
