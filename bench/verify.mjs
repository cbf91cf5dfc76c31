// Signature verification throughput, one process: Hookline's verifyWebhookSignature (from the built
// SDK, so run `npx tsc -p tsconfig.build.json` first) against standardwebhooks' and svix's
// Webhook.verify, on 1 KB and 64 KB JSON bodies with a valid signature, so every library does the
// full work (parse headers, check the timestamp, HMAC the body, compare).
//
// Method: one warm-up pass per case, then ROUNDS rounds; in each round every case runs for
// DURATION_MS, cases interleaved (size by size, library by library) so drift hits all of them
// alike. The figure reported per case is the median ops/s over the rounds.
//
// Usage: npm run bench:verify   (BENCH_DURATION_MS / BENCH_ROUNDS override the defaults)
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { generateSecret, signWebhook, verifyWebhookSignature } from '../dist/sdk/index.js';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 1500);
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Operations between two clock reads; small enough to stop close to the deadline. */
const BATCH = 16;

const SIZES = [
  { label: '1kb', title: '1 KB', bytes: 1024 },
  { label: '64kb', title: '64 KB', bytes: 64 * 1024 },
];

/** A JSON event envelope padded to exactly `bytes` bytes (svix always JSON-parses the body). */
function jsonBody(bytes) {
  const envelope = { type: 'service.trigger.event', version: 'v1', timestamp: '2025-01-01T00:00:00Z', data: { filler: '' } };
  const overhead = Buffer.byteLength(JSON.stringify(envelope));
  envelope.data.filler = 'x'.repeat(bytes - overhead);
  const body = JSON.stringify(envelope);
  if (Buffer.byteLength(body) !== bytes) throw new Error(`body is ${Buffer.byteLength(body)} bytes, wanted ${bytes}`);
  return body;
}

async function makeCases(size) {
  const secret = generateSecret();
  const id = 'msg_2mZ4pQ8rT1vW6xY9aB3cD5eF7g';
  const timestamp = Math.floor(Date.now() / 1000);
  const body = jsonBody(size.bytes);
  const signature = await signWebhook({ id, timestamp, body, secret });
  const standard = new StandardWebhook(secret);
  const svix = new SvixWebhook(secret);
  const webhookHeaders = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
  const svixHeaders = { 'svix-id': id, 'svix-timestamp': String(timestamp), 'svix-signature': signature };
  const input = { id, timestamp: String(timestamp), signature, body, secret };

  const cases = [
    // Ours resolves a boolean; a false here would mean the benchmark measures a short-circuit.
    { library: 'hookline', async: true, run: () => verifyWebhookSignature(input) },
    // jsonParse: false so standardwebhooks does signature work only, as ours does.
    { library: 'standardwebhooks', async: false, run: () => standard.verify(body, webhookHeaders, { jsonParse: false }) },
    // svix@1 wraps standardwebhooks@1.0.0, which always JSON.parses the body after verifying.
    { library: 'svix', async: false, run: () => svix.verify(body, svixHeaders) },
  ];
  if ((await cases[0].run()) !== true) throw new Error('hookline rejected a valid signature');
  cases[1].run(); // each throws on a bad signature
  cases[2].run();
  return cases;
}

/** Runs one case for `durationMs` and returns operations per second. */
async function measure(benchCase, durationMs) {
  const { run } = benchCase;
  let ops = 0;
  let sink = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  let now = start;
  if (benchCase.async) {
    while (now < deadline) {
      for (let i = 0; i < BATCH; i++) if (await run()) sink++;
      ops += BATCH;
      now = performance.now();
    }
  } else {
    while (now < deadline) {
      // The sync libraries throw on a bad signature; their return value is kept only as a sink.
      for (let i = 0; i < BATCH; i++) if (run() !== null) sink++;
      ops += BATCH;
      now = performance.now();
    }
  }
  if (sink !== ops) throw new Error(`${benchCase.library}: ${ops - sink} of ${ops} verifications failed`);
  return (ops * 1000) / (now - start);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const formatOps = (value) => Math.round(value).toLocaleString('en-US');

async function main() {
  const casesBySize = new Map();
  for (const size of SIZES) casesBySize.set(size.label, await makeCases(size));

  for (const size of SIZES) for (const benchCase of casesBySize.get(size.label)) await measure(benchCase, WARMUP_MS);

  const samples = new Map(); // `${size}/${library}` -> ops/s per round
  for (let round = 0; round < ROUNDS; round++) {
    for (const size of SIZES) {
      for (const benchCase of casesBySize.get(size.label)) {
        const key = `${size.label}/${benchCase.library}`;
        const opsPerSecond = await measure(benchCase, DURATION_MS);
        samples.set(key, [...(samples.get(key) ?? []), opsPerSecond]);
      }
    }
  }

  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`node ${process.version}, ${os.cpus().length} cores (${cpu}), ${os.platform()} ${os.arch()}`);
  console.log(`${ROUNDS} interleaved rounds of ${DURATION_MS} ms per case after a ${WARMUP_MS} ms warm-up; median ops/s\n`);
  console.log('| Body | Library | ops/s (median) | rounds (ops/s) |');
  console.log('|---|---|---:|---|');
  const results = [];
  for (const size of SIZES) {
    const row = { size };
    for (const library of ['hookline', 'standardwebhooks', 'svix']) {
      const values = samples.get(`${size.label}/${library}`);
      row[library] = median(values);
      console.log(`| ${size.title} | ${library} | ${formatOps(row[library])} | ${values.map(formatOps).join(' / ')} |`);
    }
    results.push(row);
  }

  console.log('\n| Body | hookline / standardwebhooks | hookline / svix |');
  console.log('|---|---:|---:|');
  for (const row of results) {
    row.ratioStandard = row.hookline / row.standardwebhooks;
    row.ratioSvix = row.hookline / row.svix;
    console.log(`| ${row.size.title} | ${row.ratioStandard.toFixed(2)}x | ${row.ratioSvix.toFixed(2)}x |`);
  }

  console.log('');
  for (const row of results) {
    console.log(
      `verify_${row.size.label} ours=${Math.round(row.hookline)} standardwebhooks=${Math.round(row.standardwebhooks)} ` +
        `svix=${Math.round(row.svix)} ratio_sw=${row.ratioStandard.toFixed(2)} ratio_svix=${row.ratioSvix.toFixed(2)}`,
    );
  }
}

await main();
