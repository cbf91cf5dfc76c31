#!/usr/bin/env node
// Restart with many waiting deliveries: fills a fresh data dir with BENCH_LIVE deliveries parked in
// `retrying` (due in an hour, so none is attempted), each with the history a real one has (created,
// one failed attempt: 4 transitions and an attempt log entry) and a ~1 KB event, written through the
// store of dist/ (the current write model). Then spawns `hookline serve` on it and measures spawn ->
// resumed (the 'resumed waiting deliveries' log line, and /metrics showing them all waiting; only the window is held) and the
// process's memory then (RssAnon is the anonymous part; RssFile includes LMDB's map).
//
//   npm run build && node bench/restart.mjs        BENCH_LIVE [1000000]  BENCH_KEEP=1 keeps the dir
//   BENCH_DATA_DIR=<dir>: fill that dir once and restart on it in later runs (A/B of two builds on
//   the same data; the deliveries fall due an hour after the fill, so a later run fills it again)
//   BENCH_NODE_ARGS="--trace-gc ...": node options for the serve process (its output goes to hookline.log)
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, freePort, launch, metricValue, nowMs, num, procMemory, request, stopChild, waitFor, webhookRecord, writeRetrying } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { HooklineStore } = await import(path.join(root, 'dist', 'store', 'store.js'));
const { hashApiKey } = await import(path.join(root, 'dist', 'actors', 'engine.js'));

const LIVE = num('BENCH_LIVE', 1_000_000);
const API_KEY = 'hk_bench_restart';
const reused = process.env.BENCH_DATA_DIR ? path.resolve(process.env.BENCH_DATA_DIR) : null;
const dir = reused ?? mkdtempSync(path.join(tmpdir(), 'hookline-restart-'));
const dataDir = path.join(dir, 'data');
const log = (line) => console.log(`[restart] ${line}`);
const fillMark = path.join(dir, `filled-${LIVE}.json`);
const FILL_VALID_MS = 50 * 60_000;
const filledAt = reused && existsSync(fillMark) ? JSON.parse(readFileSync(fillMark, 'utf8')).at : 0;
if (Date.now() - filledAt < FILL_VALID_MS) log(`reusing the ${LIVE} live deliveries filled into ${dataDir} at ${new Date(filledAt).toISOString()}`);
else await fill();

async function fill() {
  if (reused) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }
  const fillT0 = performance.now();
  const store = new HooklineStore({ path: dataDir });
  const now = Date.now();
  await store.createProject({ id: 'default', name: 'default', createdAt: now }, hashApiKey(API_KEY));
  await store.putWebhook('default', webhookRecord('http://127.0.0.1:9/never', { now }));
  await writeRetrying(store, 'default', { count: LIVE, tag: 'RESTART', dueAt: () => now + 3_600_000, progress: (written) => log(`${written} written`) });
  await store.close();
  log(`filled ${LIVE} live deliveries in ${((performance.now() - fillT0) / 1000).toFixed(1)} s`);
  if (reused) writeFileSync(fillMark, JSON.stringify({ at: now }));
}

const port = await freePort();
const logFile = path.join(dir, 'hookline.log');
const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`] : [];
// Not NODE_OPTIONS: it refuses some of the options worth having here (--trace-gc).
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const spawnAt = nowMs();
const node = launch(process.execPath, [...profile, ...nodeArgs, path.join(root, 'dist', 'cli', 'main.js'), 'serve'], {
  extraEnv: { HOOKLINE_DATA_DIR: dataDir, HOOKLINE_PORT: String(port), HOOKLINE_HOST: '127.0.0.1', HOOKLINE_API_KEY: API_KEY, HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1' },
  logFile,
  detached: true,
});
try {
  let peakAnonMb = 0;
  const live = await waitFor('resumed', async () => {
    peakAnonMb = Math.max(peakAnonMb, procMemory(node.pid).anonMb);
    const text = await request('GET', `http://127.0.0.1:${port}/metrics`, { timeoutMs: 5000, parse: 'auto' }).catch(() => '');
    const value = metricValue(text, 'hookline_waiting_deliveries');
    return value >= LIVE ? value : 0;
  }, { timeoutMs: 300_000, intervalMs: 10, child: node });
  const resumedS = (nowMs() - spawnAt) / 1000;
  // CPU time is steadier than wall time on a shared host: compare builds by it.
  const cpuS = cpuSeconds(node.pid);
  const memory = procMemory(node.pid);
  const line = readFileSync(logFile, 'utf8').split('\n').find((l) => l.includes('resumed waiting deliveries from LMDB'));
  const logged = line ? JSON.parse(line) : null;
  log(`spawn -> /metrics shows ${live} waiting: ${resumedS.toFixed(2)} s (process CPU ${cpuS.toFixed(2)} s)${logged ? `; 'resumed' logged at ${((logged.time - spawnAt) / 1000).toFixed(2)} s (waiting=${logged.waiting}, held=${logged.held})` : ''}`);
  log(`memory then: RssAnon ${memory.anonMb.toFixed(1)} MB (highest seen while resuming ${peakAnonMb.toFixed(1)} MB), RssFile ${memory.fileMb.toFixed(1)} MB, VmRSS ${memory.rssMb.toFixed(1)} MB, VmHWM ${memory.hwmMb.toFixed(1)} MB`);
  console.log(`restart_bench live=${LIVE} resumed_s=${resumedS.toFixed(2)} cpu_s=${cpuS.toFixed(2)} anon_mb=${memory.anonMb.toFixed(1)} peak_anon_mb=${peakAnonMb.toFixed(1)} rss_mb=${memory.rssMb.toFixed(1)}`);
} finally {
  await stopChild(node, { timeoutMs: 60_000, group: true });
  if (process.env.BENCH_KEEP || reused) log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
