// Issue 15: the throughput cost of ordered delivery (`ordering: "fifo"`). For each ordering and each
// receiver answer delay, a fresh node (its own process, from dist/) holds N events while paused,
// is activated, and the bench times the drain: first to last receipt at a node:http receiver (in
// this process) that answers 204 after DELAY ms. FIFO sends one at a time, so its rate is bounded
// by one delivery per round trip; unordered sends up to HOOKLINE_ENDPOINT_CONCURRENCY at once.
// Results: bench/results/ordering.json. Env: N (2000), DELAYS (0,5).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, launch, nowMs, num, request, serveEnv, stopChild, waitFor } from './lib.mjs';

const N = num('N', 2000);
const DELAYS = (process.env.DELAYS ?? '0,5').split(',').map(Number);
const KEY = 'bench-key';
const root = new URL('..', import.meta.url).pathname;

function startReceiver(delayMs) {
  const state = { seqs: [], firstAt: 0, lastAt: 0 };
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const answer = () => {
        const t = nowMs();
        state.firstAt ||= t;
        state.lastAt = t;
        state.seqs.push(JSON.parse(text).data.seq);
        res.writeHead(204).end();
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, state, url: `http://127.0.0.1:${server.address().port}/hooks` })));
}

async function run(ordering, delayMs) {
  const dataDir = mkdtempSync(join(tmpdir(), 'hookline-bench-ordering-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const node = launch(process.execPath, ['dist/cli/main.js', 'serve'], { cwd: root, extraEnv: { ...serveEnv({ dataDir, port, apiKey: KEY }), HOOKLINE_LOG_LEVEL: 'warn' } });
  const receiver = await startReceiver(delayMs);
  try {
    await waitFor('node ready', () => request('GET', `${base}/readyz`), { timeoutMs: 30_000, child: node });
    const config = { callbackUrl: receiver.url, eventTypes: ['service.trigger.event'], ordering };
    await request('PUT', `${base}/v1/webhook`, { key: KEY, body: { ...config, status: 'paused' } });
    for (let start = 0; start < N; start += 1000) {
      const events = Array.from({ length: Math.min(1000, N - start) }, (_, i) => ({ type: 'service.trigger.event', data: { seq: start + i } }));
      await request('POST', `${base}/v1/events/batch`, { key: KEY, body: { events }, timeoutMs: 60_000 });
    }
    const activatedAt = nowMs();
    await request('PUT', `${base}/v1/webhook`, { key: KEY, body: { ...config, status: 'active' } });
    await waitFor('every delivery received', () => receiver.state.seqs.length >= N, { timeoutMs: 600_000, intervalMs: 20, child: node });
    const seconds = (receiver.state.lastAt - activatedAt) / 1000;
    const inOrder = receiver.state.seqs.every((seq, i) => seq === i);
    return { ordering, delayMs, events: N, seconds: Number(seconds.toFixed(3)), perSecond: Math.round(N / seconds), receivedInIngestOrder: inOrder };
  } finally {
    receiver.server.closeAllConnections();
    receiver.server.close();
    await stopChild(node);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const results = [];
for (const delayMs of DELAYS) {
  for (const ordering of ['unordered', 'fifo']) {
    const result = await run(ordering, delayMs);
    results.push(result);
    console.log(`${ordering.padEnd(9)} receiver delay ${String(delayMs).padStart(3)} ms: ${result.events} deliveries in ${result.seconds} s = ${result.perSecond}/s${result.receivedInIngestOrder ? ', in ingest order' : ''}`);
  }
}
writeFileSync(new URL('./results/ordering.json', import.meta.url), `${JSON.stringify({ node: process.version, cpus: (await import('node:os')).cpus().length, results }, null, 2)}\n`);
