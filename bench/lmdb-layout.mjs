#!/usr/bin/env node
// What LMDB's key layout costs per delivery, apart from the rest of Hookline:
//   npm run build && npm run bench:lmdb-layout
//
// A key that begins with the project id puts a commit that holds the writes of many projects on a
// leaf page (and the branch pages above it) per project, where one project's writes land together
// at the end of the table. This bench writes what the engine writes per delivery
// (src/store/delivery-tables.ts), in steady state: each commit holds K new events (the event, the
// delivery's head, its status entry and first transition) and the outcomes of K deliveries made
// two commits earlier (two transitions, an attempt, the head again, the status entry moved). Per
// layout, project count and K, it reports the bytes this process handed to the kernel (`wchar` of
// /proc/self/io; `write_bytes` there counts a page each time it is dirtied, so it overstates what
// reaches the disk) and the CPU of the whole process (its commit thread too).
//
// Layouts:
//   project-first   every table keyed by [projectId, ...]: the store's delivery model 2
//   delivery-first  the same, but the transition and attempt logs keyed by [deliveryId, index]
//                   (ids sort by creation time, so those appends land at the end of one range
//                   whatever the project): the store's model 3 (src/store/delivery-tables.ts)
//
// Env: BENCH_N (30000 deliveries per case), BENCH_PROJECTS (1,64), BENCH_PER_COMMIT (20,100),
//      BENCH_LAYOUTS (project-first,delivery-first), BENCH_DIR (a temp dir), BENCH_ROUNDS (2: cases
//      alternate).
// Prints one line per case and, last, one JSON object.
import { open } from 'lmdb';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The store's own ids and tables, from the compiled code.
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
if (!existsSync(path.join(dist, 'store', 'tables.js'))) {
  process.stderr.write('bench:lmdb-layout: dist/store/tables.js is missing; this bench runs the compiled code. Build first: npm run build\n');
  process.exit(1);
}
const { newDeliveryId, newEventId } = await import(new URL('../dist/store/ids.js', import.meta.url).href);
const { openTable } = await import(new URL('../dist/store/tables.js', import.meta.url).href);

const env = process.env;
const list = (name, fallback) => (env[name] ?? fallback).split(',').map((value) => value.trim()).filter(Boolean);
const N = Number(env.BENCH_N ?? 30_000);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const PROJECTS = list('BENCH_PROJECTS', '1,64').map(Number);
const PER_COMMIT = list('BENCH_PER_COMMIT', '20,100').map(Number);
const LAYOUTS = list('BENCH_LAYOUTS', 'project-first,delivery-first');
for (const layout of LAYOUTS) {
  if (layout !== 'project-first' && layout !== 'delivery-first') {
    process.stderr.write(`bench:lmdb-layout: BENCH_LAYOUTS names "${layout}"; the layouts are project-first and delivery-first\n`);
    process.exit(2);
  }
}
const baseDir = env.BENCH_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'hookline-lmdb-layout-'));

const envelope = Buffer.alloc(1_170, 'x');
const ioCounters = () => Object.fromEntries(readFileSync('/proc/self/io', 'utf8').trim().split('\n').map((line) => line.split(': ')).map(([key, value]) => [key, Number(value)]));
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function runCase(layout, projects, perCommit, round) {
  const dir = path.join(baseDir, `${layout}-${projects}-${perCommit}-${round}`);
  const root = open({ path: dir, noSubdir: false });
  const events = openTable(root, 'events');
  const heads = openTable(root, 'deliveries');
  const byStatus = openTable(root, 'deliveries-by-status');
  const transitions = openTable(root, 'delivery-transitions');
  const attempts = openTable(root, 'delivery-attempts');
  const logKey = layout === 'delivery-first' ? (projectId, deliveryId, index) => [deliveryId, index] : (projectId, deliveryId, index) => [projectId, deliveryId, index];
  const head = (id, eventId, status, at) => ({ id, eventId, eventType: 'order.created', status, attempts: status === 'pending' ? 0 : 1, roundAttempts: 0, roundSize: 8, nextAttemptAt: status === 'pending' ? at : null, createdAt: at, updatedAt: at, transitionCount: status === 'pending' ? 1 : 3, attemptCount: status === 'pending' ? 0 : 1 });
  const made = [];
  const before = { io: ioCounters(), cpu: cpuMs() };
  let sequence = 0;
  for (let commit = 0; made.length > 0 || sequence < N; commit++) {
    const now = Date.now();
    const ingested = [];
    for (let i = 0; i < perCommit && sequence < N; i++, sequence++) {
      const projectId = `prj_${String(sequence % projects).padStart(4, '0')}`;
      const eventId = newEventId(now);
      const deliveryId = newDeliveryId(now);
      events.put([projectId, eventId], { id: eventId, type: 'order.created', fingerprint: '~', envelope, createdAt: now, answer: { id: eventId, deliveryId }, deliveryIds: [deliveryId] });
      heads.put([projectId, deliveryId], head(deliveryId, eventId, 'pending', now));
      byStatus.put([projectId, 'pending', deliveryId], [now, 0, 0, 8, 1, 0]);
      transitions.put(logKey(projectId, deliveryId, 0), { from: null, to: 'pending', event: 'created', at: now });
      ingested.push({ projectId, eventId, deliveryId });
    }
    // The outcomes of the deliveries made two commits ago: an attempt takes a while.
    const finishing = made.length >= 2 || sequence >= N ? made.shift() : [];
    for (const { projectId, eventId, deliveryId } of finishing) {
      transitions.put(logKey(projectId, deliveryId, 1), { from: 'pending', to: 'delivering', event: 'attempt', at: now });
      transitions.put(logKey(projectId, deliveryId, 2), { from: 'delivering', to: 'succeeded', event: 'succeeded', at: now });
      attempts.put(logKey(projectId, deliveryId, 0), { attempt: 1, at: now, statusCode: 204, durationMs: 3, error: null, errorCode: null, responseBody: '' });
      heads.put([projectId, deliveryId], head(deliveryId, eventId, 'succeeded', now));
      byStatus.remove([projectId, 'pending', deliveryId]);
      byStatus.put([projectId, 'succeeded', deliveryId], [null, 1, 1, 8, 3, 1]);
    }
    if (ingested.length > 0) made.push(ingested);
    await root.flushed;
  }
  const after = { io: ioCounters(), cpu: cpuMs() };
  await root.close();
  rmSync(dir, { recursive: true, force: true });
  return { layout, projects, perCommit, kbPerDelivery: (after.io.wchar - before.io.wchar) / N / 1024, cpuMsPerDelivery: (after.cpu - before.cpu) / N };
}

const results = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const projects of PROJECTS) {
      for (const perCommit of PER_COMMIT) {
        for (const layout of LAYOUTS) {
          const result = await runCase(layout, projects, perCommit, round);
          results.push(result);
          console.log(`round ${round} layout=${layout} projects=${projects} deliveries/commit=${perCommit}: ${result.kbPerDelivery.toFixed(1)} KB written, ${(result.cpuMsPerDelivery * 1000).toFixed(1)} µs CPU per delivery`);
        }
      }
    }
  }
} finally {
  if (!env.BENCH_DIR) rmSync(baseDir, { recursive: true, force: true });
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const cases = [];
for (const projects of PROJECTS) {
  for (const perCommit of PER_COMMIT) {
    for (const layout of LAYOUTS) {
      const mine = results.filter((r) => r.layout === layout && r.projects === projects && r.perCommit === perCommit);
      cases.push({ layout, projects, per_commit: perCommit, kb_per_delivery: +median(mine.map((r) => r.kbPerDelivery)).toFixed(2), cpu_us_per_delivery: +(median(mine.map((r) => r.cpuMsPerDelivery)) * 1000).toFixed(1) });
    }
  }
}
console.log(JSON.stringify({ bench: 'lmdb-layout', n: N, rounds: ROUNDS, node: process.version, cases }));
