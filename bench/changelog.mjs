#!/usr/bin/env node
// A partition's changelog restore, with and without a snapshot. Fills one partition of a fresh
// JetStream stream through dist/'s PartitionChangelog as a cluster node does: BENCH_DELIVERIES
// ingests (event and delivery in one entry, group-committed BENCH_TURN a turn), then each delivery's
// attempt as one step (delivering → succeeded). The oldest deliveries, all but BENCH_RETAINED of
// them, count as past retention. Then it times a restore (a new node taking the partition over),
// a snapshot, a restore from it, and, after BENCH_MORE of the deliveries again as new traffic, a
// second snapshot with its purge of what the first replaced. A restore here hands each record to a
// no-op: a node's LMDB writes come on top, in proportion to the records restored.
//
//   npm run build && npm run bench:changelog
//   BENCH_DELIVERIES [100000]  BENCH_RETAINED [0.2]  BENCH_MORE [0.2]  BENCH_EVENT_BYTES [512]
//   BENCH_TURN [500]  BENCH_NATS_URL [127.0.0.1:4222]  BENCH_KEEP=1 keeps the stream
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventPadding, num } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { PartitionChangelog } = await import(path.join(root, 'dist', 'cluster', 'changelog.js'));
const { connect } = await import('@nats-io/transport-node');
const { jetstreamManager } = await import('@nats-io/jetstream');

const DELIVERIES = num('BENCH_DELIVERIES', 100_000);
const RETAINED = num('BENCH_RETAINED', 0.2);
const MORE = num('BENCH_MORE', 0.2);
const TURN = num('BENCH_TURN', 500);
const PARTITION = 0;
const log = (line) => console.log(`[changelog] ${line}`);

const nc = await connect({ servers: process.env.BENCH_NATS_URL ?? '127.0.0.1:4222', noAsyncTraces: true });
const manager = await jetstreamManager(nc);
const suffix = randomBytes(4).toString('hex');
const stream = `HL_BENCH_CHANGELOG_${suffix}`;
const prefix = `hlbench.changelog.${suffix}`;
const pad = eventPadding(num('BENCH_EVENT_BYTES', 512));
const held = () => true;
const idOf = (kind, n) => `${kind}_01BENCH${n.toString(16).toUpperCase().padStart(16, '0')}`;
// Past retention: the oldest deliveries, by id (ids sort by creation time, as the real ones do).
const cutoff = idOf('dlv', Math.floor(DELIVERIES * (1 - RETAINED)));
const expired = (record) => (record.status === 'succeeded' || record.status === 'dead_lettered') && record.id < cutoff;

function ingest(n) {
  const eventId = idOf('evt', n);
  const id = idOf('dlv', n);
  const envelope = Buffer.from(JSON.stringify({ version: 'v1', id: eventId, type: 'service.trigger.event', metadata: {}, data: { n, pad }, timestamp: new Date(1_780_000_000_000 + n).toISOString() }));
  const event = { id: eventId, type: 'service.trigger.event', fingerprint: '', envelope, createdAt: n, answer: { id: eventId, deliveryId: id }, deliveryIds: [id] };
  const delivery = { id, eventId, eventType: 'service.trigger.event', status: 'pending', attempts: 0, roundAttempts: 0, roundSize: 8, nextAttemptAt: null, createdAt: n, updatedAt: n, attemptLog: [], transitions: [{ from: null, to: 'pending', event: 'CREATED', at: n }] };
  return [{ kind: 'event', projectId: 'p1', record: event }, { kind: 'delivery', projectId: 'p1', record: delivery }];
}

function attempt(n) {
  const at = n + 10;
  const change = {
    status: 'succeeded', attempts: 1, roundAttempts: 1, roundSize: 8, nextAttemptAt: null, updatedAt: at + 3, transitionIndex: 1, attemptIndex: 0,
    transitions: [{ from: 'pending', to: 'delivering', event: 'START_ATTEMPT', at }, { from: 'delivering', to: 'succeeded', event: 'ATTEMPT_SUCCEEDED', at: at + 3 }],
    attempt: { attempt: 1, at, statusCode: 204, durationMs: 3, error: null, errorCode: null, responseBody: '' },
  };
  return { kind: 'steps', projectId: 'p1', record: { id: idOf('dlv', n), changes: [change] } };
}

async function fill(writer, from, to) {
  for (let start = from; start < to; start += TURN) {
    const end = Math.min(to, start + TURN);
    const appends = [];
    for (let n = start; n < end; n++) appends.push(writer.appendTogether(PARTITION, ingest(n), held));
    await Promise.all(appends);
    const steps = [];
    for (let n = start; n < end; n++) steps.push(writer.append(PARTITION, attempt(n), held));
    await Promise.all(steps);
  }
}

/** Wall and CPU milliseconds of `work`, its longest stall of the event loop, and its result. */
async function timed(work) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const result = await work();
  const used = process.cpuUsage(cpu);
  delay.disable();
  return { result, ms: Math.round(performance.now() - t0), cpuMs: Math.round((used.user + used.system) / 1000), stallMs: Math.round(delay.max / 1e6) };
}

async function streamState() {
  const { state } = await manager.streams.info(stream);
  return `${state.messages} messages, ${(state.bytes / 1e6).toFixed(1)} MB`;
}

async function restoreElsewhere() {
  const node = new PartitionChangelog(nc, stream, prefix);
  return timed(() => node.restore(PARTITION, () => {}));
}

const rows = [];
try {
  const writer = new PartitionChangelog(nc, stream, prefix);
  await writer.ensureStream();
  await writer.restore(PARTITION, () => {});
  const filled = await timed(() => fill(writer, 0, DELIVERIES));
  log(`filled ${DELIVERIES} deliveries (${Math.round(DELIVERIES * RETAINED)} within retention) in ${filled.ms} ms: ${await streamState()}`);

  const plain = await restoreElsewhere();
  rows.push(['restore, no snapshot', plain.ms, plain.cpuMs, plain.stallMs, `${plain.result} records`, await streamState()]);
  const first = await timed(() => writer.compact(PARTITION, expired, held));
  rows.push(['snapshot 1', first.ms, first.cpuMs, first.stallMs, `${first.result.records} records, ${first.result.leftOut} left out, ${first.result.purged} purged`, await streamState()]);
  const fromSnapshot = await restoreElsewhere();
  rows.push(['restore from snapshot 1', fromSnapshot.ms, fromSnapshot.cpuMs, fromSnapshot.stallMs, `${fromSnapshot.result} records`, '']);

  const more = Math.round(DELIVERIES * MORE);
  await fill(writer, DELIVERIES, DELIVERIES + more);
  const second = await timed(() => writer.compact(PARTITION, expired, held));
  rows.push([`snapshot 2 (after ${more} more)`, second.ms, second.cpuMs, second.stallMs, `${second.result.records} records, ${second.result.leftOut} left out, ${second.result.purged} purged`, await streamState()]);
  const afterPurge = await restoreElsewhere();
  rows.push(['restore from snapshot 2', afterPurge.ms, afterPurge.cpuMs, afterPurge.stallMs, `${afterPurge.result} records`, '']);

  console.log(`\n| step | wall ms | CPU ms (this process) | longest event-loop stall ms | what | stream after |\n|---|---:|---:|---:|---|---|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(`\nrestore from snapshot 1 / restore with no snapshot: ${(fromSnapshot.ms / plain.ms).toFixed(2)}x wall, ${(fromSnapshot.cpuMs / plain.cpuMs).toFixed(2)}x CPU`);
} finally {
  if (process.env.BENCH_KEEP !== '1') await manager.streams.delete(stream).catch(() => {});
  await nc.close();
}
