// Webhook receiver for the engine bench, in its own process: node:http, reads the whole body and
// answers STATUS (204, or 500 for the "retrying" scenario). Per delivery it counts (distinct
// webhook-ids apart), records the receipt time (all of them: /stats gives the most received in any
// one-second window) and, when the body carries `"sentAt":<epoch ms>` (set by loadgen.mjs when it
// POSTed the event to Hookline), the ingest->receipt latency. The latency scan is a string search on
// the raw body, not a JSON.parse, to keep the receiver cheap. Every SAMPLE_EVERY-th delivery (and only
// once a secret is known) is verified with Hookline's own SDK verifier from dist/.
//
// Control (same port): GET /stats, POST /reset, POST /secret {"secret":"whsec_..."}.
// Env: PORT (required), STATUS (204), SAMPLE_EVERY (100; 0 = never verify)
import http from 'node:http';
import { nowMs, quantile } from '../lib.mjs';

const PORT = Number(process.env.PORT);
const STATUS = Number(process.env.STATUS || 204);
const SAMPLE_EVERY = Number(process.env.SAMPLE_EVERY ?? 100);

const { verifyWebhookSignature } = await import(new URL('../../dist/sdk/index.js', import.meta.url).href);

let secret = null;
let s;
function reset() {
  s = { received: 0, bytes: 0, firstAt: 0, lastAt: 0, times: [], lat: [], verified: 0, badSignatures: 0, missingHeaders: 0, duplicates: 0, ids: new Set() };
}
reset();

const SENT_AT = '"sentAt":';
function sentAtOf(text) {
  const at = text.indexOf(SENT_AT);
  if (at < 0) return NaN;
  return Number.parseFloat(text.slice(at + SENT_AT.length, at + SENT_AT.length + 24));
}

/** The most entries of ascending `times` (ms) in any window of `windowMs`, the window sliding over them. */
function mostInWindow(times, windowMs) {
  let most = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while (times[last] - times[first] >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

function stats() {
  const lat = Float64Array.from(s.lat).sort();
  return {
    received: s.received,
    unique: s.ids.size,
    duplicates: s.duplicates,
    bytes: s.bytes,
    first_at: s.firstAt,
    last_at: s.lastAt,
    max_per_1s: mostInWindow(s.times, 1000),
    latency_n: lat.length,
    p50_ms: quantile(lat, 0.5),
    p90_ms: quantile(lat, 0.9),
    p99_ms: quantile(lat, 0.99),
    max_ms: lat.length ? lat[lat.length - 1] : null,
    verified: s.verified,
    bad_signatures: s.badSignatures,
    missing_headers: s.missingHeaders,
  };
}

function readJson(req) {
  return new Promise((resolve) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { text += chunk; });
    req.on('end', () => resolve(text ? JSON.parse(text) : {}));
  });
}

const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats()));
    return;
  }
  if (req.url === '/reset') {
    reset();
    res.writeHead(204);
    res.end();
    return;
  }
  if (req.url === '/secret') {
    readJson(req).then((body) => {
      secret = body.secret;
      res.writeHead(204);
      res.end();
    });
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const t = nowMs();
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const id = req.headers['webhook-id'];
    if (!id || !req.headers['webhook-signature'] || !req.headers['webhook-timestamp']) s.missingHeaders++;
    if (s.ids.has(id)) s.duplicates++;
    else s.ids.add(id);
    s.received++;
    s.bytes += body.length;
    if (!s.firstAt) s.firstAt = t;
    s.lastAt = t;
    s.times.push(t);
    const sentAt = sentAtOf(body.toString('latin1'));
    if (sentAt > 0) s.lat.push(t - sentAt);
    if (secret && SAMPLE_EVERY > 0 && s.received % SAMPLE_EVERY === 1) {
      verifyWebhookSignature({ id, timestamp: req.headers['webhook-timestamp'], signature: req.headers['webhook-signature'], body, secret }).then(
        (ok) => { if (ok) s.verified++; else s.badSignatures++; },
        () => { s.badSignatures++; },
      );
    }
    res.writeHead(STATUS);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.listen(PORT, '127.0.0.1', () => {
  process.stderr.write(`receiver on 127.0.0.1:${PORT} status=${STATUS} pid=${process.pid}\n`);
  process.send?.('ready');
});
const stop = () => {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop);
