// Helpers shared by the bench scripts (run.mjs, nats.mjs, cluster.mjs, soak.mjs, engine/*.mjs).
// Plain Node, no dependencies; every party still runs in a process of its own.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Epoch milliseconds with sub-millisecond precision (comparable across processes). */
export const nowMs = () => performance.timeOrigin + performance.now();

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The number in environment variable `name`, or `fallback` when it is unset or empty. */
export const num = (name, fallback) => (process.env[name] === undefined || process.env[name] === '' ? fallback : Number(process.env[name]));

/** A TCP port free on 127.0.0.1 right now (the kernel's pick, released before returning). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * fetch with an optional JSON body and bearer `key`; throws on a non-2xx answer. `parse: 'json'`
 * returns the parsed body (null when empty); `parse: 'auto'` parses only a JSON content-type and
 * otherwise returns the text.
 */
export async function request(method, url, { body, key, timeoutMs = 10_000, parse = 'json' } = {}) {
  const headers = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} -> ${res.status} ${text.slice(0, 300)}`);
  if (parse === 'auto') return text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  return text ? JSON.parse(text) : null;
}

/**
 * Polls `check` every `intervalMs` until it returns a truthy value (returned); a throw counts as "not
 * yet". Fails after `timeoutMs`, or at once when `child` has exited. With `showLastError`, the
 * timeout message ends with the last error `check` threw.
 */
export async function waitFor(what, check, { timeoutMs, intervalMs = 50, child = null, showLastError = false }) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`${what}: process exited (${child.exitCode ?? child.signalCode})`);
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error; // not yet
    }
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms${showLastError && lastError ? ` (${lastError.message})` : ''}`);
    await sleep(intervalMs);
  }
}

/** Sends `signal` to a child's whole process group (it must be spawned detached), else to the child. */
export function killTree(cp, signal = 'SIGTERM') {
  if (cp.exitCode !== null || cp.signalCode !== null) return;
  try {
    process.kill(-cp.pid, signal); // each child leads its own process group (detached)
  } catch {
    try { cp.kill(signal); } catch { /* gone */ }
  }
}

/**
 * Spawns `command args` (cwd `cwd`, process.env plus `extraEnv`), stdout/stderr appended to `logFile`
 * or collected (`cp.output()`); `cp.exited` resolves with { code, signal }. The child is in `children`
 * (a Set) until it exits. `detached` gives it a process group of its own; `echoStderr` copies its
 * collected stderr to ours.
 */
export function launch(command, args, { cwd, extraEnv = {}, logFile = null, children = null, detached = false, echoStderr = false } = {}) {
  let out = '';
  const fd = logFile ? openSync(logFile, 'a') : null;
  const options = { cwd, env: { ...process.env, ...extraEnv }, stdio: fd === null ? ['ignore', 'pipe', 'pipe'] : ['ignore', fd, fd] };
  if (detached) options.detached = true;
  const cp = spawn(command, args, options);
  if (fd !== null) closeSync(fd);
  children?.add(cp);
  cp.stdout?.on('data', (d) => (out += d));
  cp.stderr?.on('data', (d) => {
    out += d;
    if (echoStderr) process.stderr.write(d);
  });
  cp.output = () => out;
  cp.exited = new Promise((resolve) => cp.on('exit', (code, signal) => {
    children?.delete(cp);
    resolve({ code, signal });
  }));
  return cp;
}

/**
 * Waits for `cp` (from launch, output collected) to exit and answers the last line of its output that
 * is a JSON object (the report of loadgen.mjs and the like), parsed; without one, throws with the
 * output's tail, `what` naming the child.
 */
export async function jsonReport(cp, what) {
  const { code } = await cp.exited;
  const line = cp.output().trim().split('\n').reverse().find((l) => l.startsWith('{'));
  if (!line) throw new Error(`${what} failed (${code}): ${cp.output().slice(-800)}`);
  return JSON.parse(line);
}

/**
 * SIGTERM, then SIGKILL if the child is still running after `timeoutMs`; resolves once it exited.
 * `group` signals its whole process group (see killTree).
 */
export async function stopChild(cp, { timeoutMs = 30_000, group = false } = {}) {
  if (!cp || cp.exitCode !== null || cp.signalCode !== null) return;
  const kill = group ? killTree : (child, signal) => child.kill(signal);
  kill(cp, 'SIGTERM');
  const done = await Promise.race([cp.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  if (!done) {
    kill(cp, 'SIGKILL');
    await cp.exited;
  }
}

/** CPU seconds (utime + stime) a process has used so far, from /proc/<pid>/stat; NaN when unreadable. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // CLK_TCK = 100 on Linux x64
  } catch {
    return Number.NaN;
  }
}

/** Jiffies of the whole machine (all cores): busy and total, from the first line of /proc/stat. */
export function machineCpu() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - f[3] - f[4], total };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/** Cores busy between two `machineCpu()` readings (anyone's work), given the wall seconds between them. */
export function busyCores(before, after, wallS) {
  return (after.busy - before.busy) / 100 / wallS;
}

/** The pid of the nats-server process listening on `port` (its command line names the port), or null. */
export function natsServerPid(port) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (path.basename(args[0] ?? '') === 'nats-server' && args.some((arg, i) => arg === String(port) && ['-p', '--port'].includes(args[i - 1]))) return Number(entry);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return null;
}

/** VmRSS, VmHWM, RssAnon and RssFile of a process in MB, from /proc/<pid>/status; NaN when unreadable. */
export function procMemory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024, anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024 };
  } catch {
    return { rssMb: Number.NaN, hwmMb: Number.NaN, anonMb: Number.NaN, fileMb: Number.NaN };
  }
}

/** The value of Prometheus sample `name` (any labels) in a /metrics text, NaN when absent. */
export function metricValue(text, name) {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** The sum of every series of metric `name` (all its label sets) in a Prometheus text exposition. */
export function metricSum(text, name) {
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'gm'))) sum += Number(match[1]);
  return sum;
}

/** The `p` quantile (0..1, nearest rank below) of an ascending array; null when empty; rounded to `digits` when given. */
export function quantile(sorted, p, digits = null) {
  if (!sorted.length) return null;
  const value = sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return digits === null ? value : Number(value.toFixed(digits));
}

/**
 * Runs `send(i)` for i < n: closed loop with `inFlight` workers (rate 0), or open loop at `rate`/s,
 * event i due at t0 + i/rate whatever the answers do, until `until()` (n may be Infinity then).
 * `minSleepMs` is the shortest pause between two sending passes of the open loop; `clockPerPass`
 * reads the clock once per pass (sends what was due when the pass began) instead of before each send.
 */
export async function drive(n, rate, inFlight, send, { until = () => false, minSleepMs = 0, clockPerPass = false } = {}) {
  let next = 0;
  if (rate > 0) {
    const pending = new Set();
    const t0 = nowMs();
    while (next < n && !until()) {
      const passAt = clockPerPass ? nowMs() : null;
      while (next < n && t0 + (next * 1000) / rate <= (clockPerPass ? passAt : nowMs())) {
        const p = send(next++);
        pending.add(p);
        p.finally(() => pending.delete(p));
      }
      if (next < n) await sleep(Math.max(minSleepMs, t0 + (next * 1000) / rate - nowMs()));
    }
    await Promise.all(pending);
  } else {
    const worker = async () => {
      while (next < n) await send(next++);
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
  }
}

/** Padding for `data.pad` so the envelope Hookline delivers for `{sentAt, seq, pad}` data is about `eventBytes`. */
export function eventPadding(eventBytes) {
  // Envelope overhead, measured on a stand-in with ids and timestamps of the real lengths.
  const sample = JSON.stringify({
    version: 'v1', id: 'evt_0000000000AAAAAAAAAAAAAAAA', type: 'service.trigger.event', metadata: {},
    data: { sentAt: Number(nowMs().toFixed(3)), seq: 0, pad: '' }, timestamp: '2026-01-01T00:00:00.000+00:00',
  });
  return 'x'.repeat(Math.max(0, eventBytes - sample.length - 6));
}

/** The HOOKLINE_* settings every bench serve process gets: data dir, port, API key, host 127.0.0.1, private networks allowed. */
export function serveEnv({ dataDir, port, apiKey }) {
  return {
    HOOKLINE_DATA_DIR: dataDir,
    HOOKLINE_PORT: String(port),
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_API_KEY: apiKey,
    HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
  };
}

/**
 * Receiver bookkeeping for one delivery whose raw body is `text`, received at `t`: counts it, counts a
 * repeat of its event id (`"id":"evt_…"`) as a duplicate, and moves first/last receipt times.
 */
export function countReceipt(s, text, t) {
  const eventId = /"id":"(evt_[^"]+)"/.exec(text)?.[1];
  if (s.ids.has(eventId)) s.duplicates++;
  else s.ids.add(eventId);
  s.received++;
  if (!s.firstAt) s.firstAt = t;
  s.lastAt = t;
}

/** Serves a bench receiver's `server` on 127.0.0.1:`port` (keep-alive 60 s); SIGTERM ends the process. */
export function listenReceiver(server, port) {
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}

/** Node's flag for `perf` to name JIT-compiled JS functions (a /tmp/perf-<pid>.map per process). */
export const PERF_NODE_ARGS = ['--perf-basic-prof-only-functions'];

/**
 * `BENCH_PERF_DIR`: `perf record` of process `pid` (started with PERF_NODE_ARGS) from now until
 * `stop()`, which writes `<dir>/<name>.perf.txt` (`perf script`) and answers its summary
 * (engine/perf-summary.mjs). perf counts CPU time and sees the kernel, which V8's --cpu-prof does not.
 */
export function startPerfRecording(pid, dir, name) {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('BENCH_PERF_DIR needs perf on PATH (Debian: apt-get install -y linux-perf), or unset it');
  }
  mkdirSync(dir, { recursive: true });
  const data = path.join(dir, `${name}.perf.data`);
  const recorder = launch('perf', ['record', '-F', '499', '-g', '-p', String(pid), '-o', data]);
  return {
    async stop() {
      recorder.kill('SIGINT');
      await recorder.exited;
      const script = path.join(dir, `${name}.perf.txt`);
      writeFileSync(script, execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }));
      const summary = execFileSync(process.execPath, [fileURLToPath(new URL('./engine/perf-summary.mjs', import.meta.url)), script, '20'], { encoding: 'utf8' });
      return `perf: ${script}\n${summary}`;
    },
  };
}

/** Bytes allocated on disk (not apparent: LMDB files can be sparse) by the files directly in `dir`, in MB. */
export function dirSizeMb(dir) {
  let bytes = 0;
  for (const name of readdirSync(dir)) {
    const st = statSync(path.join(dir, name));
    if (st.isFile()) bytes += st.blocks * 512;
  }
  return bytes / 2 ** 20;
}

/** Uppercase hex of `n`, zero-padded to `width`: the counter part of the sortable ids the fills write. */
const hexOf = (n, width) => n.toString(16).toUpperCase().padStart(width, '0');

/**
 * The record `store.putWebhook` takes for an endpoint at `callbackUrl` receiving service.trigger.event,
 * in `state` ('active', 'paused'), signed with a fixed secret: what PUT /v1/webhook writes.
 */
export function webhookRecord(callbackUrl, { state = 'active', now = Date.now() } = {}) {
  return { callbackUrl, state, eventTypes: ['service.trigger.event'], createdAt: now, updatedAt: now, secrets: [{ secret: 'whsec_' + Buffer.alloc(24, 7).toString('base64'), createdAt: now, expiresAt: null }], failingSince: null, disabledAt: null, disabledReason: null };
}

/**
 * Writes `count` deliveries of project `projectId` straight through a dist/ HooklineStore, the records
 * the node itself writes: an event of about `eventBytes` and its delivery parked in `retrying` after one
 * failed attempt (4 transitions, one attempt log entry), due at `dueAt(n)`. Ids are sortable in creation
 * order as the real ones are, `tag` (uppercase letters) telling fills apart. `CHUNK` writes are awaited
 * together; `progress(written)` is called after each tenth chunk.
 */
export async function writeRetrying(store, projectId, { count, tag, eventBytes = 1024, dueAt, progress = () => {} }) {
  const CHUNK = 20_000;
  const now = Date.now();
  const pad = eventPadding(eventBytes);
  for (let from = 0; from < count; from += CHUNK) {
    const writes = [];
    for (let n = from; n < Math.min(count, from + CHUNK); n++) {
      const at = now - count + n;
      const eventId = `evt_01${tag}${hexOf(n, 16)}`;
      const id = `dlv_01${tag}${hexOf(n, 16)}`;
      const envelope = Buffer.from(JSON.stringify({ version: 'v1', id: eventId, type: 'service.trigger.event', metadata: {}, data: { n, pad }, timestamp: new Date(at).toISOString().replace('Z', '+00:00') }));
      const event = { id: eventId, type: 'service.trigger.event', fingerprint: hexOf(n, 64), envelope, createdAt: at, answer: { id: eventId, deliveryId: id }, deliveryIds: [id] };
      const delivery = {
        id, eventId, eventType: 'service.trigger.event', status: 'retrying', attempts: 1, roundAttempts: 1, roundSize: 8,
        nextAttemptAt: dueAt(n), createdAt: at, updatedAt: at + 5,
        attemptLog: [{ attempt: 1, at: at + 1, statusCode: 500, durationMs: 3, error: 'HTTP 500', errorCode: 'http_status', responseBody: 'internal error' }],
        transitions: [
          { from: null, to: 'pending', event: 'CREATED', at },
          { from: 'pending', to: 'delivering', event: 'START_ATTEMPT', at: at + 1 },
          { from: 'delivering', to: 'failed', event: 'ATTEMPT_FAILED', at: at + 5 },
          { from: 'failed', to: 'retrying', event: 'ATTEMPT_FAILED', at: at + 5 },
        ],
      };
      writes.push(store.writeIngest(projectId, event, delivery));
    }
    await Promise.all(writes);
    if ((from / CHUNK) % 10 === 0) progress(from + writes.length);
  }
}

/**
 * `size` nats-server processes of a bench's own (JetStream, a store each under `dir`, routed to each
 * other when more than one), plain TCP on loopback, added to `children`: a bench's figures are then
 * not shared with the machine's NATS, nor are its streams. `stop()` ends them.
 */
export async function startNatsServers(size, dir, children = null) {
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), route: await freePort() });
  const servers = ports.map(({ client, route }, i) => {
    const routes = ports.filter((_, j) => j !== i).map((peer) => `nats-route://127.0.0.1:${peer.route}`);
    const config = path.join(dir, `n${i + 1}.conf`);
    writeFileSync(config, [
      `server_name: n${i + 1}`,
      `listen: 127.0.0.1:${client}`,
      `jetstream { store_dir: "${path.join(dir, `store-n${i + 1}`)}" }`,
      ...(size > 1 ? [`cluster { name: hlbench, listen: 127.0.0.1:${route}, routes: [${routes.join(', ')}] }`] : []),
    ].join('\n'));
    return launch('nats-server', ['-c', config], { logFile: path.join(dir, `n${i + 1}.log`), children });
  });
  const url = ports.map(({ client }) => `nats://127.0.0.1:${client}`).join(',');
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const options = { timeoutMs: 30_000, intervalMs: 200, showLastError: true };
  const probe = await waitFor('nats-server up', () => connect({ servers: url.split(','), timeout: 2_000 }), options);
  await waitFor('JetStream of the NATS servers', async () => (await jetstreamManager(probe)).getAccountInfo(), { ...options, timeoutMs: 60_000, intervalMs: 250 });
  await probe.close();
  return { url, pids: servers.map((cp) => cp.pid), stop: () => Promise.all(servers.map((cp) => stopChild(cp))) };
}
