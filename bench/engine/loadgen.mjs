// Load generator for the engine bench, in its own process: POSTs N events to Hookline's
// POST /v1/events through one undici Pool (keep-alive, CONCURRENCY connections).
//   RATE=0   closed loop: CONCURRENCY requests in flight until N are accepted (throughput);
//   RATE=r   open loop: event i is sent at t0 + i/r seconds whatever the answers do (latency).
// Each event's data starts with `"sentAt":<epoch ms, 3 decimals>` taken just before the POST, so the
// receiver can measure ingest->receipt. The data is padded so the envelope Hookline delivers is about
// EVENT_BYTES (1024) bytes.
//   BATCH=b  b events per request to POST /v1/events/batch (N is still counted in events; the last
//            request may hold fewer); RATE and CONCURRENCY then count requests.
// Env: TARGET (http://127.0.0.1:port), API_KEY, N, CONCURRENCY (64), RATE (0), EVENT_BYTES (1024), BATCH (1)
// Last stdout line: one JSON object (see `report` below).
import { Pool } from 'undici';
import { drive, eventPadding, nowMs, quantile } from '../lib.mjs';

const TARGET = new URL(process.env.TARGET);
const API_KEY = process.env.API_KEY;
const N = Number(process.env.N || 10_000);
const CONCURRENCY = Number(process.env.CONCURRENCY || 64);
const RATE = Number(process.env.RATE || 0);
const EVENT_BYTES = Number(process.env.EVENT_BYTES || 1024);
const BATCH = Math.max(1, Number(process.env.BATCH || 1));
const REQUESTS = Math.ceil(N / BATCH);

const pad = eventPadding(EVENT_BYTES);
const headers = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };
const bodyFor = (seq) => `{"type":"service.trigger.event","data":{"sentAt":${nowMs().toFixed(3)},"seq":${seq},"pad":"${pad}"}}`;

const pool = new Pool(TARGET.origin, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });

let accepted = 0;
let unmatched = 0;
let errors = 0;
let firstSendAt = 0;
let lastAckAt = 0;
let bodyBytes = 0;
const statuses = {};
const ackLat = new Float64Array(REQUESTS);
let ackCount = 0;

/** Occurrences of `needle` in `text`: a batch answer's accepted items, without parsing it. */
const count = (text, needle) => text.split(needle).length - 1;

async function send(request) {
  const first = request * BATCH;
  const size = Math.min(BATCH, N - first);
  const body = BATCH === 1 ? bodyFor(first) : `{"events":[${Array.from({ length: size }, (_, i) => bodyFor(first + i)).join(',')}]}`;
  const t0 = nowMs();
  if (!firstSendAt) { firstSendAt = t0; bodyBytes = Buffer.byteLength(body); }
  try {
    const res = await pool.request({ method: 'POST', path: BATCH === 1 ? '/v1/events' : '/v1/events/batch', headers, body });
    const text = await res.body.text();
    const t1 = nowMs();
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    if (res.statusCode === 202) {
      accepted += size;
      unmatched += count(text, '"deliveryId":null');
      ackLat[ackCount++] = t1 - t0;
      lastAckAt = t1;
    } else {
      errors++;
      if (errors <= 3) process.stderr.write(`ingest answered ${res.statusCode}: ${text.slice(0, 300)}\n`);
    }
  } catch (error) {
    errors++;
    if (errors <= 3) process.stderr.write(`ingest error: ${error.message}\n`);
  }
}

await drive(REQUESTS, RATE, CONCURRENCY, send, { clockPerPass: true });
await pool.close();

const lat = ackLat.subarray(0, ackCount).sort();
const q = (p) => quantile(lat, p, 2);
const report = {
  n: N, batch: BATCH, rate: RATE, concurrency: CONCURRENCY, accepted, unmatched, errors, statuses,
  first_send_at: firstSendAt, last_ack_at: lastAckAt, body_bytes: bodyBytes,
  ingest_per_s: Math.round(accepted / ((lastAckAt - firstSendAt) / 1000)),
  ack_p50_ms: q(0.5), ack_p99_ms: q(0.99),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(errors > 0 && accepted === 0 ? 1 : 0);
