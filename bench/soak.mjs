// Soak (`npm run soak`; not part of `npm test`). SOAK_EVENTS events (default 1,000,000), half over
// NATS JetStream (the SDK's publishEvent, retried until acked) and half over HTTP POST /v1/events
// (retried until answered 202/200), to receivers that flap, with a SIGTERM + restart of Hookline in
// the middle. At the end every accepted event must have ended `succeeded` or `dead_lettered`, and the
// set of ended events must equal the set of accepted ones exactly (no loss, no extra, no duplicate).
// It builds nothing: it runs the compiled `dist/` (run `npx tsc -p tsconfig.build.json` first).
//
// Parties, each a process of its own, all on 127.0.0.1:
//   - Hookline: `node dist/cli/main.js serve`, a fresh data dir, NATS stream / subject prefix /
//     durable of its own, retry schedule 0,100ms,500ms,1s (4 attempts, jittered), receiver timeout 1 s.
//   - receivers: `node bench/soak.mjs receiver`, SOAK_PROJECTS ports (one per project), each
//     answering 204, or at random 500 (6%), a hang past the timeout (0.5%), a TCP reset (0.5%); and
//     flapping: every 40 s each receiver in turn is down for 2 s (500 to everything).
//   - this process: the producers (SOAK_HTTP_CONCURRENCY POSTs and SOAK_NATS_IN_FLIGHT publishes in
//     flight; both wait while Hookline has more than SOAK_MAX_BACKLOG waiting deliveries, so memory
//     measures the steady state rather than a growing queue; they do not wait for the restart),
//     VmRSS of the Hookline process every second, the restart (SIGTERM, wait for exit 0, start again
//     on the same data dir) once half the events are accepted, and the final check through the log API.
//
// Accepted: answered 202 or 200 (a repeat of an id Hookline already has), or acked by JetStream.
// Output: bench/results/soak-rss.csv (one row a second), bench/results/soak-rss.svg (the RSS curve),
// bench/results/soak.json (the figures), and a summary on stdout. `node bench/soak.mjs render`
// redraws the SVG from the CSV and the JSON.
//
// Env: SOAK_EVENTS (1000000), SOAK_PROJECTS (4), SOAK_NATS_URL (nats://127.0.0.1:4222),
//      SOAK_HTTP_CONCURRENCY (128), SOAK_NATS_IN_FLIGHT (256), SOAK_MAX_BACKLOG (10000),
//      SOAK_EVENT_BYTES (~512, envelope size), SOAK_KEEP=1 (keep the data dir and logs).
// Smoke run: SOAK_EVENTS=20000 npm run soak
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, metricValue as metric, num, procMemory, serveEnv, sleep } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const env = process.env;
const fmt = (value, digits = 0) => (value === null || value === undefined || Number.isNaN(value) ? '-' : Number(value).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

// ---------------------------------------------------------------------------------------------
// Receiver process: `node bench/soak.mjs receiver` with PORTS=p1,p2,... ; prints "ready" on stdout.
// ---------------------------------------------------------------------------------------------

const FAIL_500 = 0.06;
const HANG = 0.005;
const RESET = 0.005;
const FLAP_PERIOD_MS = 40_000;
const FLAP_DOWN_MS = 2_000;

function runReceivers() {
  const ports = env.PORTS.split(',').map(Number);
  const started = Date.now();
  const counts = { requests: 0, ok: 0, failed: 0, hung: 0, reset: 0, flapped: 0 };
  ports.forEach((port, index) => {
    const server = http.createServer((req, res) => {
      req.on('data', () => {});
      req.on('end', () => {
        counts.requests++;
        // Each receiver is down for FLAP_DOWN_MS once per FLAP_PERIOD_MS, the receivers in turn.
        const phase = (Date.now() - started + (index * FLAP_PERIOD_MS) / ports.length) % FLAP_PERIOD_MS;
        if (phase < FLAP_DOWN_MS) {
          counts.flapped++;
          return void res.writeHead(500).end('flapping');
        }
        const roll = Math.random();
        if (roll < RESET) {
          counts.reset++;
          return void req.socket.resetAndDestroy();
        }
        if (roll < RESET + HANG) {
          counts.hung++;
          return; // never answered: Hookline's timeout ends it
        }
        if (roll < RESET + HANG + FAIL_500) {
          counts.failed++;
          return void res.writeHead(500).end('random failure');
        }
        counts.ok++;
        res.writeHead(204).end();
      });
    });
    server.keepAliveTimeout = 60_000;
    server.listen(port, '127.0.0.1');
  });
  process.on('message', (message) => {
    if (message === 'stats') process.send?.({ stats: counts });
  });
  process.send?.('ready');
}

// ---------------------------------------------------------------------------------------------
// Helpers for the driver.
// ---------------------------------------------------------------------------------------------

/** VmRSS of a process and its anonymous and file-backed parts (LMDB's map is file-backed), in MB (Linux /proc). */
function memoryOf(pid) {
  const { rssMb, anonMb, fileMb } = procMemory(pid);
  return { rss: rssMb, anon: anonMb, file: fileMb };
}

/** The 1-minute load average (the machine may be shared), NaN when unreadable. */
function loadAverage() {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}

/** Starts `hookline serve`; resolves once /healthz answers. */
async function startHookline(settings, logPath) {
  const out = openSync(logPath, 'a');
  const child = spawn(process.execPath, [path.join(root, 'dist', 'cli', 'main.js'), 'serve'], {
    cwd: root,
    env: { ...Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('HOOKLINE_'))), ...settings },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = `http://127.0.0.1:${settings.HOOKLINE_PORT}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const gone = await Promise.race([exited, sleep(50).then(() => null)]);
    if (gone) throw new Error(`hookline exited during start (${JSON.stringify(gone)}); see ${logPath}`);
    const ok = await fetch(`${url}/healthz`).then((response) => response.ok, () => false);
    if (ok) return { child, exited, url, startedAt: Date.now() };
    if (Date.now() > deadline) throw new Error(`hookline did not answer /healthz within 30 s; see ${logPath}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The SVG plot: RSS (left axis) and events accepted (right axis, % of the total) over time.
// ---------------------------------------------------------------------------------------------

function niceStep(span, ticks) {
  const raw = span / Math.max(1, ticks);
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

/** Keeps at most `buckets` × 2 points: each bucket's lowest and highest, in time order. */
function decimate(points, buckets) {
  if (points.length <= buckets * 2) return points;
  const size = points.length / buckets;
  const out = [];
  for (let b = 0; b < buckets; b++) {
    const slice = points.slice(Math.floor(b * size), Math.floor((b + 1) * size));
    if (slice.length === 0) continue;
    let low = slice[0];
    let high = slice[0];
    for (const point of slice) {
      if (point[1] < low[1]) low = point;
      if (point[1] > high[1]) high = point;
    }
    out.push(...(low[0] <= high[0] ? [low, high] : [high, low]).filter((point, i, pair) => i === 0 || point !== pair[0]));
  }
  return out;
}

export function renderSvg({ title, rss, anon = [], progress, markers, width = 860, height = 380 }) {
  const margin = { left: 64, right: 64, top: 56, bottom: 48 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const tMax = Math.max(1, ...rss.map((point) => point[0]), ...progress.map((point) => point[0]));
  const yMaxRaw = Math.max(1, ...rss.map((point) => point[1]));
  const yStep = niceStep(yMaxRaw, 6);
  const yMax = Math.ceil((yMaxRaw * 1.05) / yStep) * yStep;
  const tStep = niceStep(tMax, 8);
  const x = (t) => (margin.left + (t / tMax) * plotW).toFixed(1);
  const y = (mb) => (margin.top + plotH - (mb / yMax) * plotH).toFixed(1);
  const yPct = (pct) => (margin.top + plotH - (pct / 100) * plotH).toFixed(1);
  const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`);
  for (let mb = 0; mb <= yMax + 1e-9; mb += yStep) {
    parts.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(mb)}" y2="${y(mb)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${margin.left - 8}" y="${Number(y(mb)) + 4}" text-anchor="end">${fmt(mb)}</text>`);
  }
  for (let pct = 0; pct <= 100; pct += 25) parts.push(`<text x="${margin.left + plotW + 8}" y="${Number(yPct(pct)) + 4}" fill="#888">${pct}%</text>`);
  for (let t = 0; t <= tMax + 1e-9; t += tStep) {
    parts.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${margin.top + plotH}" y2="${margin.top + plotH + 5}" stroke="#333"/>`);
    parts.push(`<text x="${x(t)}" y="${margin.top + plotH + 18}" text-anchor="middle">${fmt(t)}</text>`);
  }
  parts.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  parts.push(`<text x="${margin.left + plotW / 2}" y="${height - 10}" text-anchor="middle">seconds since start</text>`);
  parts.push(`<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">Hookline VmRSS (MB)</text>`);
  parts.push(`<text transform="translate(${width - 14} ${margin.top + plotH / 2}) rotate(90)" text-anchor="middle" fill="#888">events accepted (% of total)</text>`);
  markers.forEach((marker, i) => {
    const at = Number(x(marker.t));
    // Labels step down one line each; near the right edge they sit left of their line.
    const right = at > margin.left + plotW * 0.75;
    parts.push(`<line x1="${at}" x2="${at}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#c0392b" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${right ? at - 4 : at + 4}" y="${margin.top + 14 + 14 * i}" fill="#c0392b" text-anchor="${right ? 'end' : 'start'}">${esc(marker.label)}</text>`);
  });
  const line = (points, toY) => decimate(points, 400).map(([t, v], i) => `${i === 0 ? 'M' : 'L'}${x(t)} ${toY(v)}`).join('');
  parts.push(`<path d="${line(progress, yPct)}" fill="none" stroke="#aaa" stroke-width="1.5" stroke-dasharray="5 3"/>`);
  // Memory is drawn per process (a restart breaks the line).
  const perProcess = (series, color) => {
    const runs = [];
    for (const point of series) {
      if (!runs.length || point[2] !== runs[runs.length - 1].pid) runs.push({ pid: point[2], points: [] });
      runs[runs.length - 1].points.push([point[0], point[1]]);
    }
    for (const run of runs) parts.push(`<path d="${line(run.points, y)}" fill="none" stroke="${color}" stroke-width="1.8"/>`);
  };
  perProcess(anon, '#27ae60');
  perProcess(rss, '#2471a3');
  const legend = [['#2471a3', 'VmRSS', ''], ['#27ae60', 'RssAnon (heap and native)', ''], ['#aaa', 'events accepted', ' stroke-dasharray="5 3"']];
  parts.push(`<g transform="translate(${margin.left} 40)">`);
  legend.forEach(([color, label, dash], i) => parts.push(`<line x1="${i * 200}" x2="${i * 200 + 22}" y1="0" y2="0" stroke="${color}" stroke-width="2"${dash}/><text x="${i * 200 + 28}" y="4">${label}</text>`));
  parts.push('</g>');
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// The driver.
// ---------------------------------------------------------------------------------------------

async function runSoak() {
  const N = num('SOAK_EVENTS', 1_000_000);
  const PROJECTS = num('SOAK_PROJECTS', 4);
  const NATS_URL = env.SOAK_NATS_URL || 'nats://127.0.0.1:4222';
  const HTTP_CONCURRENCY = num('SOAK_HTTP_CONCURRENCY', 128);
  const NATS_IN_FLIGHT = num('SOAK_NATS_IN_FLIGHT', 256);
  const MAX_BACKLOG = num('SOAK_MAX_BACKLOG', 10_000);
  const EVENT_BYTES = num('SOAK_EVENT_BYTES', 512);
  const KEEP = env.SOAK_KEEP === '1';
  const log = (line) => process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${line}\n`);

  if (!existsSync(path.join(root, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.build.json` first');
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const { Pool } = await import('undici');
  const { publishEvent } = await import(pathToFileURL(path.join(root, 'dist', 'sdk', 'nats.js')).href);

  const t0 = Date.now();
  const tag = randomBytes(4).toString('hex');
  const work = mkdtempSync(path.join(os.tmpdir(), 'hookline-soak-'));
  const logPath = path.join(work, 'hookline.log');
  const names = { stream: `HL_SOAK_${tag}`, prefix: `hlsoak.${tag}.events`, durable: `soak_${tag}` };
  const adminKey = `soak-admin-${randomBytes(12).toString('hex')}`;
  const port = await freePort();
  const settings = {
    ...serveEnv({ dataDir: path.join(work, 'data'), port, apiKey: `soak-default-${tag}` }),
    HOOKLINE_ADMIN_KEY: adminKey,
    HOOKLINE_RETRY_SCHEDULE: '0,100ms,500ms,1s',
    HOOKLINE_DELIVERY_TIMEOUT: '1s',
    HOOKLINE_NATS_URL: NATS_URL,
    HOOKLINE_NATS_STREAM: names.stream,
    HOOKLINE_NATS_SUBJECT_PREFIX: names.prefix,
    HOOKLINE_NATS_DURABLE: names.durable,
    HOOKLINE_LOG_LEVEL: 'warn',
  };
  log(`soak ${fmt(N)} events, ${PROJECTS} projects, work dir ${work}, NATS ${NATS_URL} stream ${names.stream}`);

  const nc = await connect({ servers: NATS_URL, name: 'hookline-soak', reconnect: true, maxReconnectAttempts: -1 }).catch((error) => {
    throw new Error(`NATS at ${NATS_URL} is not reachable (${error.message}); start nats-server -js`);
  });
  const manager = await jetstreamManager(nc);

  // Receivers.
  const receiverPorts = await Promise.all(Array.from({ length: PROJECTS }, () => freePort()));
  const receivers = spawn(process.execPath, [fileURLToPath(import.meta.url), 'receiver'], { env: { ...env, PORTS: receiverPorts.join(',') }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve, reject) => {
    receivers.once('message', resolve);
    receivers.once('exit', (code) => reject(new Error(`receivers exited (${code})`)));
  });

  // Hookline, projects and webhooks.
  let node = await startHookline(settings, logPath);
  const pids = [node.child.pid];
  const projects = [];
  for (let p = 0; p < PROJECTS; p++) {
    const created = await fetch(`${node.url}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `soak-${p}` }) });
    const { projectId, apiKey } = await created.json();
    const put = await fetch(`${node.url}/v1/webhook`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callbackUrl: `http://127.0.0.1:${receiverPorts[p]}/hooks/${p}`, status: 'active', eventTypes: ['service.trigger.event', 'service.connected_account.expired', 'service.trigger.disabled'] }),
    });
    if (put.status !== 200) throw new Error(`PUT /v1/webhook answered ${put.status}`);
    projects.push({ projectId, apiKey });
  }

  // State per event n: bit 1 accepted, bit 2 succeeded, bit 4 dead-lettered, bit 8 seen twice in the log.
  const state = new Uint8Array(N);
  let accepted = 0;
  const acceptedBy = { http: 0, nats: 0 };
  const retries = { http: 0, nats: 0, http503: 0, http429: 0, httpConnection: 0 };
  const idOf = (n) => `evt_soak${tag}_${n}`;
  const pad = 'x'.repeat(Math.max(0, EVENT_BYTES - 300));
  const eventOf = (n) => ({ id: idOf(n), type: 'service.trigger.event', data: { n, pad }, metadata: { trigger_id: `trg_${n % 97}`, tenant_id: `tenant_${n % 13}` } });
  const accept = (n, via) => {
    if (state[n] & 1) return;
    state[n] |= 1;
    accepted++;
    acceptedBy[via]++;
  };

  // Backlog gate: producers wait while Hookline has more than MAX_BACKLOG waiting deliveries.
  let backlog = 0;
  let liveMetrics = {};
  let pollingMetrics = true;
  const metricsLoop = (async () => {
    while (pollingMetrics) {
      const text = await fetch(`${node.url}/metrics`).then((response) => (response.ok ? response.text() : null), () => null);
      if (text) {
        backlog = metric(text, 'hookline_waiting_deliveries');
        liveMetrics = { live: backlog, scheduled: metric(text, 'hookline_scheduled_retries'), ready: metric(text, 'hookline_ready_queue_depth') };
      }
      await sleep(250);
    }
  })();
  // Producers keep going through the restart: POSTs fail (503 shutting_down, refused connections)
  // and are retried with the same id; publishes queue up in JetStream until the new process consumes them.
  const gate = async () => {
    while (backlog > MAX_BACKLOG) await sleep(20);
  };

  // RSS sampling, one row a second.
  const samples = [];
  const markers = [];
  const dataSizeMb = () => {
    try {
      return (statSync(path.join(settings.HOOKLINE_DATA_DIR, 'data.mdb')).blocks * 512) / 1024 / 1024;
    } catch {
      return Number.NaN;
    }
  };
  const sampler = setInterval(() => {
    const t = (Date.now() - t0) / 1000;
    const pid = node.child.pid;
    samples.push({ t, pid, ...memoryOf(pid), dataMb: dataSizeMb(), accepted, live: liveMetrics.live ?? Number.NaN, load1: loadAverage() });
  }, 1000);

  // Producers.
  const httpShare = [];
  const natsShare = [];
  for (let n = 0; n < N; n++) (n % 2 === 0 ? httpShare : natsShare).push(n);
  const pool = new Pool(node.url, { connections: HTTP_CONCURRENCY, pipelining: 1, keepAliveTimeout: 30_000 });
  let nextHttp = 0;
  let nextNats = 0;
  const restartAt = Math.floor(N / 2);
  const PACE_SLACK = 1000;
  let restartPromise = null;
  const maybeRestart = () => {
    if (restartPromise || accepted < restartAt) return;
    restartPromise = (async () => {
      const t = (Date.now() - t0) / 1000;
      log(`restart: SIGTERM to pid ${node.child.pid} with ${fmt(accepted)} accepted, live ${fmt(backlog)}`);
      markers.push({ t, label: 'SIGTERM + restart' });
      node.child.kill('SIGTERM');
      const exit = await node.exited;
      log(`  exited ${JSON.stringify(exit)} after ${((Date.now() - t0) / 1000 - t).toFixed(1)} s`);
      if (exit.code !== 0) throw new Error(`hookline exited with ${JSON.stringify(exit)} on SIGTERM; see ${logPath}`);
      node = await startHookline(settings, logPath);
      pids.push(node.child.pid);
      log(`  restarted as pid ${node.child.pid} after ${((Date.now() - t0) / 1000 - t).toFixed(1)} s down`);
    })();
  };

  const httpWorker = async () => {
    for (;;) {
      const index = nextHttp++;
      if (index >= httpShare.length) return;
      const n = httpShare[index];
      const project = projects[n % PROJECTS];
      const body = JSON.stringify(eventOf(n));
      for (;;) {
        await gate();
        let status = 0;
        let retryAfter = 0;
        try {
          const response = await pool.request({ method: 'POST', path: '/v1/events', headers: { authorization: `Bearer ${project.apiKey}`, 'content-type': 'application/json' }, body, headersTimeout: 10_000, bodyTimeout: 10_000 });
          status = response.statusCode;
          retryAfter = Number(response.headers['retry-after'] ?? 0);
          await response.body.text();
        } catch {
          status = 0; // connection refused or reset (the restart): try again
        }
        if (status === 202 || status === 200) {
          accept(n, 'http');
          maybeRestart();
          break;
        }
        retries.http++;
        if (status === 503) retries.http503++;
        if (status === 429) retries.http429++;
        if (status === 0) retries.httpConnection++;
        if (status >= 400 && status < 500 && status !== 429) throw new Error(`POST /v1/events answered ${status} for ${idOf(n)}`);
        await sleep(Math.min(1000, retryAfter > 0 ? retryAfter * 1000 : 100));
      }
    }
  };
  const natsWorker = async () => {
    for (;;) {
      // Publishing outruns POSTing (no HTTP round trip per event): keep the two halves abreast, so
      // the mix stays half and half throughout the run, the restart included.
      while (nextNats > nextHttp + PACE_SLACK && nextHttp < httpShare.length) await sleep(5);
      const index = nextNats++;
      if (index >= natsShare.length) return;
      const n = natsShare[index];
      const project = projects[n % PROJECTS];
      for (;;) {
        await gate();
        try {
          await publishEvent(nc, project.projectId, eventOf(n), { subjectPrefix: names.prefix });
          accept(n, 'nats');
          maybeRestart();
          break;
        } catch {
          retries.nats++;
          await sleep(100);
        }
      }
    }
  };
  const progress = setInterval(() => {
    const sample = samples[samples.length - 1];
    log(`accepted ${fmt(accepted)} / ${fmt(N)} (http ${fmt(acceptedBy.http)}, nats ${fmt(acceptedBy.nats)}), live ${fmt(liveMetrics.live)}, retrying ${fmt(liveMetrics.scheduled)}, RSS ${fmt(sample?.rss, 1)} MB`);
  }, 15_000);

  const produceStart = Date.now();
  await Promise.all([...Array.from({ length: HTTP_CONCURRENCY }, httpWorker), ...Array.from({ length: NATS_IN_FLIGHT }, natsWorker)]);
  if (restartPromise) await restartPromise;
  const producedAt = Date.now();
  markers.push({ t: (producedAt - t0) / 1000, label: 'all accepted' });
  log(`all ${fmt(accepted)} accepted in ${((producedAt - produceStart) / 1000).toFixed(1)} s; waiting for every delivery to end`);

  // Drained: JetStream consumer acked everything, no live delivery left, for two polls in a row.
  let quiet = 0;
  for (;;) {
    const consumer = await manager.consumers.info(names.stream, names.durable).catch(() => null);
    const drained = consumer && consumer.num_pending === 0 && consumer.num_ack_pending === 0;
    quiet = drained && liveMetrics.live === 0 ? quiet + 1 : 0;
    if (quiet >= 3) break;
    await sleep(500);
  }
  const endedAt = Date.now();
  clearInterval(progress);
  log(`every delivery ended ${((endedAt - producedAt) / 1000).toFixed(1)} s after the last acceptance`);

  // Page through the log: succeeded and dead-lettered, every project.
  const counts = { succeeded: 0, dead_lettered: 0, unknown: 0, duplicate: 0, otherStatus: 0 };
  const pageStart = Date.now();
  // Reading every delivery back maps the whole LMDB file into the process (file-backed RSS).
  markers.push({ t: (pageStart - t0) / 1000, label: 'log check' });
  for (const project of projects) {
    for (const [status, bit] of [['succeeded', 2], ['dead_lettered', 4]]) {
      let cursor = null;
      do {
        const query = `status=${status}&limit=250${cursor ? `&cursor=${cursor}` : ''}`;
        const response = await fetch(`${node.url}/v1/logs/webhook-deliveries?${query}`, { headers: { authorization: `Bearer ${project.apiKey}` } });
        if (!response.ok) throw new Error(`log page answered ${response.status}`);
        const page = await response.json();
        for (const delivery of page.data) {
          const match = /^evt_soak[0-9a-f]{8}_(\d+)$/.exec(delivery.eventId);
          const n = match ? Number(match[1]) : -1;
          if (n < 0 || n >= N) {
            counts.unknown++;
            continue;
          }
          if (state[n] & 6) {
            counts.duplicate++;
            state[n] |= 8;
          }
          state[n] |= bit;
          counts[status]++;
        }
        cursor = page.nextCursor;
      } while (cursor);
    }
    for (const status of ['pending', 'delivering', 'retrying']) {
      const response = await fetch(`${node.url}/v1/logs/webhook-deliveries?status=${status}&limit=250`, { headers: { authorization: `Bearer ${project.apiKey}` } });
      counts.otherStatus += (await response.json()).data.length;
    }
  }
  const pagedS = (Date.now() - pageStart) / 1000;

  let missing = 0;
  let notAccepted = 0;
  let both = 0;
  const missingExamples = [];
  for (let n = 0; n < N; n++) {
    const s = state[n];
    const ended = (s & 6) !== 0;
    if ((s & 1) && !ended) {
      missing++;
      if (missingExamples.length < 10) missingExamples.push(idOf(n));
    }
    if (!(s & 1) && ended) notAccepted++;
    if ((s & 6) === 6) both++;
  }
  const setsMatch = accepted === N && missing === 0 && notAccepted === 0 && both === 0 && counts.duplicate === 0 && counts.unknown === 0 && counts.otherStatus === 0 && counts.succeeded + counts.dead_lettered === accepted;

  // Stop everything.
  pollingMetrics = false;
  await metricsLoop;
  clearInterval(sampler);
  const finalMetrics = await fetch(`${node.url}/metrics`).then((response) => response.text());
  receivers.send('stats');
  const receiverStats = await new Promise((resolve) => receivers.once('message', (message) => resolve(message.stats)));
  node.child.kill('SIGTERM');
  const lastExit = await node.exited;
  receivers.kill('SIGTERM');
  await pool.close();
  await manager.streams.delete(names.stream).catch(() => false);
  await nc.close();

  // RSS figures per process: start (first sample), warm (after the first 20% of its life), end.
  const runs = pids.map((pid) => samples.filter((sample) => sample.pid === pid && Number.isFinite(sample.rss)));
  const rssFigures = runs.map((run) => {
    const warmIndex = Math.floor(run.length * 0.2);
    const tail = run.slice(warmIndex);
    return {
      samples: run.length,
      startMb: run[0]?.rss,
      warmMb: run[warmIndex]?.rss,
      endMb: run[run.length - 1]?.rss,
      warmMinMb: Math.min(...tail.map((sample) => sample.rss)),
      warmMaxMb: Math.max(...tail.map((sample) => sample.rss)),
      anon: { startMb: run[0]?.anon, warmMb: run[warmIndex]?.anon, endMb: run[run.length - 1]?.anon, warmMinMb: Math.min(...tail.map((sample) => sample.anon)), warmMaxMb: Math.max(...tail.map((sample) => sample.anon)) },
      fileEndMb: run[run.length - 1]?.file,
      dataEndMb: run[run.length - 1]?.dataMb,
    };
  });

  const results = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.arch()}, Node ${process.version}`,
    events: N,
    projects: PROJECTS,
    acceptedHttp: acceptedBy.http,
    acceptedNats: acceptedBy.nats,
    accepted,
    producerRetries: retries,
    produceSeconds: (producedAt - produceStart) / 1000,
    totalSeconds: (endedAt - produceStart) / 1000,
    throughputPerSecond: accepted / ((endedAt - produceStart) / 1000),
    succeeded: counts.succeeded,
    deadLettered: counts.dead_lettered,
    missing,
    endedNotAccepted: notAccepted,
    endedTwice: counts.duplicate,
    unknownIds: counts.unknown,
    stillLive: counts.otherStatus,
    setsMatch,
    missingExamples,
    logPagingSeconds: pagedS,
    loadAverage1m: { mean: samples.reduce((sum, sample) => sum + (sample.load1 || 0), 0) / Math.max(1, samples.length), max: Math.max(...samples.map((sample) => sample.load1 || 0)) },
    attempts: Object.fromEntries([...finalMetrics.matchAll(/^hookline_delivery_attempts_total\{outcome="([^"]+)"\} (\d+)/gm)].map((match) => [match[1], Number(match[2])])),
    receivers: receiverStats,
    markers,
    rss: rssFigures,
    lastExit,
  };

  mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(root, 'bench', 'results', 'soak-rss.csv'), `t_s,pid,vmrss_mb,rss_anon_mb,rss_file_mb,lmdb_data_mb,accepted,live_deliveries,load1\n${samples.map((sample) => `${sample.t.toFixed(1)},${sample.pid},${sample.rss.toFixed(1)},${sample.anon.toFixed(1)},${sample.file.toFixed(1)},${sample.dataMb.toFixed(1)},${sample.accepted},${sample.live},${sample.load1}`).join('\n')}\n`);
  writeFileSync(path.join(root, 'bench', 'results', 'soak.json'), `${JSON.stringify(results, null, 2)}\n`);
  renderResults();

  log('');
  log(`events ${fmt(N)}: accepted ${fmt(accepted)} (HTTP ${fmt(acceptedBy.http)}, NATS ${fmt(acceptedBy.nats)}); producer retries HTTP ${fmt(retries.http)} (503 ${fmt(retries.http503)}, 429 ${fmt(retries.http429)}, connection ${fmt(retries.httpConnection)}), NATS ${fmt(retries.nats)}`);
  log(`ended: succeeded ${fmt(counts.succeeded)} + dead_lettered ${fmt(counts.dead_lettered)} = ${fmt(counts.succeeded + counts.dead_lettered)}; missing ${missing}, ended-not-accepted ${notAccepted}, ended twice ${counts.duplicate}, unknown ${counts.unknown}, still live ${counts.otherStatus}`);
  log(`sets match exactly: ${setsMatch ? 'yes' : 'NO'}${missingExamples.length ? ` (missing e.g. ${missingExamples.join(', ')})` : ''}`);
  log(`duration ${results.totalSeconds.toFixed(1)} s (producing ${results.produceSeconds.toFixed(1)} s), throughput ${fmt(results.throughputPerSecond)} events/s end to end; log paging ${pagedS.toFixed(1)} s`);
  log(`machine load (1-min average) during the run: mean ${fmt(results.loadAverage1m.mean, 1)}, max ${fmt(results.loadAverage1m.max, 1)} on ${os.cpus().length} cores`);
  log(`attempts by outcome: ${JSON.stringify(results.attempts)}; receivers: ${JSON.stringify(receiverStats)}`);
  rssFigures.forEach((figure, index) => {
    log(`VmRSS process ${index + 1}: start ${fmt(figure.startMb, 1)} MB, warm ${fmt(figure.warmMb, 1)} MB, end ${fmt(figure.endMb, 1)} MB (after warm-up: ${fmt(figure.warmMinMb, 1)}-${fmt(figure.warmMaxMb, 1)} MB, ${figure.samples} samples; file-backed at the end ${fmt(figure.fileEndMb, 1)} MB, LMDB data file ${fmt(figure.dataEndMb, 1)} MB)`);
    log(`  RssAnon: start ${fmt(figure.anon.startMb, 1)} MB, warm ${fmt(figure.anon.warmMb, 1)} MB, end ${fmt(figure.anon.endMb, 1)} MB (after warm-up: ${fmt(figure.anon.warmMinMb, 1)}-${fmt(figure.anon.warmMaxMb, 1)} MB)`);
  });
  log(`final SIGTERM exit ${JSON.stringify(lastExit)}; NATS stream ${names.stream} deleted`);
  log(`wrote bench/results/soak-rss.csv, bench/results/soak-rss.svg, bench/results/soak.json`);
  process.stdout.write(`${JSON.stringify({ soak: { events: N, accepted, succeeded: counts.succeeded, dead_lettered: counts.dead_lettered, sets_match: setsMatch, seconds: Number(results.totalSeconds.toFixed(1)), per_second: Math.round(results.throughputPerSecond), rss: rssFigures.map((figure) => [figure.startMb, figure.warmMb, figure.endMb].map((mb) => Number(mb?.toFixed(1)))) } })}\n`);
  if (!KEEP) rmSync(work, { recursive: true, force: true });
  else log(`kept ${work}`);
  if (!setsMatch || lastExit.code !== 0) process.exitCode = 1;
}

/** bench/results/soak-rss.svg from bench/results/soak-rss.csv and soak.json (`node bench/soak.mjs render`). */
function renderResults() {
  const results = JSON.parse(readFileSync(path.join(root, 'bench', 'results', 'soak.json'), 'utf8'));
  const [header, ...rows] = readFileSync(path.join(root, 'bench', 'results', 'soak-rss.csv'), 'utf8').trim().split('\n');
  const columns = header.split(',');
  const samples = rows.map((row) => Object.fromEntries(row.split(',').map((value, i) => [columns[i], Number(value)])));
  writeFileSync(
    path.join(root, 'bench', 'results', 'soak-rss.svg'),
    renderSvg({
      title: `Hookline soak: ${fmt(results.events)} events (half NATS, half HTTP), flapping receivers, restart midway`,
      rss: samples.filter((sample) => Number.isFinite(sample.vmrss_mb)).map((sample) => [sample.t_s, sample.vmrss_mb, sample.pid]),
      anon: samples.filter((sample) => Number.isFinite(sample.rss_anon_mb)).map((sample) => [sample.t_s, sample.rss_anon_mb, sample.pid]),
      progress: samples.map((sample) => [sample.t_s, (100 * sample.accepted) / results.events]),
      markers: results.markers ?? [],
    }),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv[2] === 'receiver') runReceivers();
  else if (process.argv[2] === 'render') renderResults();
  else
    runSoak().catch((error) => {
      process.stderr.write(`soak failed: ${error.stack ?? error}\n`);
      process.exit(1);
    });
}
