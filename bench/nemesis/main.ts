import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { parseDuration } from '../../src/config/duration.js';
import { checkHistory, type Violation } from './checks.js';
import { addEvidence, readMetrics, readViews } from './collect.js';
import { attributeViolations, compareReplicas, describeCopies, type NatsFaults } from './nats-faults.js';
import { healAll, runNemesis } from './nemesis.js';
import { startProducer, type Producer } from './producers.js';
import { readStreamReplicas } from './replicas.js';
import { writeReport, type RunOptions, type RunReport } from './report.js';
import { planFaults } from './schedule.js';
import { INGEST, NATS_SERVERS, NODE_IDS, startSystem, type NemesisSystem } from './setup.js';
import { watchLoopLag } from './loop-lag.js';
import { ownershipTrouble, readOwnership } from './ownership.js';
import { firstReceipts, secondsOfRun } from './timeline.js';

/**
 * `npm run nemesis`: Hookline's cluster under faults, checked the way Jepsen checks a database.
 * Starts a three-server NATS cluster and three Hookline nodes behind link proxies, produces events
 * over HTTP and NATS to receivers that are healthy, flapping or slow, runs a schedule of faults
 * drawn from the seed, heals everything, waits for delivery to settle, checks the history and
 * compares the NATS servers' replicas of the streams once they are stopped (a fault of NATS is
 * reported apart, nats-faults.ts) and writes the report. Exit 0 when every check holds (NATS faults
 * alone warn), 1 on any Hookline violation, 2 on a usage error or when the run itself could not be
 * carried out. docs/nemesis.md is the manual.
 */

const USAGE = `Usage: npm run nemesis -- [options]

Runs three Hookline nodes on a three-server NATS cluster under faults drawn from a seed (kill -9,
SIGSTOP past the lease, partitions, slow links), then checks that every acknowledged event was
delivered, that no success is recorded without a receipt, that every delivery is final or
scheduled, that every node's API agrees, and that every duplicate lies near a fault.

Options:
  --seed N          the schedule's seed (default: a random one, printed)
  --duration D      how long load and faults run, e.g. 60s or 30m (default 60s, at least 10s)
  --report DIR      where report.md, report.json, timeline.svg and logs/ go
                    (default .bench/nemesis/seed-N)
  --rate N          events per second per producer, HTTP and NATS each (default 20)
  --lease D         HOOKLINE_LEASE_TTL of the nodes (default 3s)
  --settle D        how long to wait after the heal for the partitions to lie where rendezvous
                    hashing puts them, then as long again for delivery to settle (default 60s)
  --keep            keep the temporary directory (NATS stores, node data) for a post-mortem
  --help            this text

Exit status: 0 every check held (or the only problems were faults of NATS: divergent stream
replicas, reported with a warning); 1 a Hookline violation (the seed to reproduce it is printed);
2 a usage error or a run that could not be carried out (the cluster never formed).
See docs/nemesis.md.
`;

const PARTITIONS = 16;
const DELIVERY_TIMEOUT_MS = 5_000;
const MAX_IN_FLIGHT = 200;
/** After the heal, producers keep sending what was never acknowledged for this long. */
const UNACKED_GRACE_MS = 20_000;
/** A `retrying` delivery overdue by more than this is stuck. */
const OVERDUE_MS = 10_000;
/** The partition changelog's stream: the nodes name it after the ingest stream (cluster-node.ts). */
const CHANGELOG_STREAM = `${INGEST.stream}_CHANGELOG`;

interface Arguments {
  seed: number;
  durationMs: number;
  reportDir: string;
  rate: number;
  leaseMs: number;
  settleMs: number;
  keep: boolean;
}

function parseArguments(argv: readonly string[]): Arguments | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      seed: { type: 'string' },
      duration: { type: 'string' },
      report: { type: 'string' },
      rate: { type: 'string' },
      lease: { type: 'string' },
      settle: { type: 'string' },
      keep: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  if (positionals.length > 0) throw new Error(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const whole = (name: string, text: string | undefined, fallback: number, min: number) => {
    if (text === undefined) return fallback;
    if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) throw new Error(`--${name} must be a whole number ${min} or more, got ${JSON.stringify(text)}`);
    return Number(text);
  };
  const duration = (name: string, text: string | undefined, fallback: number, min: number) => {
    const ms = text === undefined ? fallback : parseDuration(text);
    if (ms < min) throw new Error(`--${name} must be at least ${min / 1000}s, got ${JSON.stringify(text)}`);
    return ms;
  };
  const seed = whole('seed', values.seed, Math.floor(Math.random() * 2 ** 31), 0);
  if (seed >= 2 ** 32) throw new Error(`--seed must be below 2^32, got ${seed}`);
  return {
    seed,
    durationMs: duration('duration', values.duration, 60_000, 10_000),
    reportDir: resolve(values.report ?? join('.bench', 'nemesis', `seed-${seed}`)),
    rate: whole('rate', values.rate, 20, 1),
    leaseMs: duration('lease', values.lease, 3_000, 1_000),
    settleMs: duration('settle', values.settle, 60_000, 1_000),
    keep: values.keep ?? false,
  };
}

const pause = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function quantile(sorted: readonly number[], q: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Waits until every acknowledged event has a receipt and no delivery waits, or `deadline`; answers whether it settled. */
async function settle(system: NemesisSystem, producers: readonly Producer[], deadline: number): Promise<boolean> {
  for (;;) {
    const received = new Set(system.projects.flatMap((project) => project.receiver.receipts(project.projectId)).filter((receipt) => receipt.verified && receipt.status >= 200 && receipt.status < 300).map((receipt) => receipt.eventId));
    const waitingEvents = producers.flatMap((producer) => [...producer.events.values()]).filter((event) => event.ackedAt !== null && !received.has(event.id)).length;
    let waitingDeliveries = 0;
    if (waitingEvents === 0) {
      try {
        for (const project of system.projects) {
          const { counts } = await system.client(system.nodes[0]!, project).getStats({ signal: AbortSignal.timeout(5_000) });
          waitingDeliveries += counts.pending + counts.delivering + counts.retrying;
        }
      } catch {
        waitingDeliveries = Number.NaN;
      }
      if (waitingDeliveries === 0) return true;
    }
    if (Date.now() > deadline) return false;
    await pause(1_000);
  }
}

async function run(args: Arguments): Promise<number> {
  const runLog: string[] = [];
  let startedAt = Date.now();
  const log = (line: string) => {
    const stamped = `[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${line}`;
    runLog.push(stamped);
    console.log(stamped);
  };
  const reproduce = `npm run nemesis -- --seed ${args.seed} --duration ${args.durationMs / 1000}s${args.rate !== 20 ? ` --rate ${args.rate}` : ''}${args.leaseMs !== 3_000 ? ` --lease ${args.leaseMs}ms` : ''}`;
  log(`nemesis seed ${args.seed}, ${args.durationMs / 1000} s; report in ${args.reportDir}`);
  mkdirSync(args.reportDir, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'hookline-nemesis-'));
  let system: NemesisSystem | null = null;
  let connection: NatsConnection | null = null;
  const producers: Producer[] = [];
  try {
    try {
      system = await startSystem(dir, { partitions: PARTITIONS, leaseMs: args.leaseMs, deliveryTimeoutMs: DELIVERY_TIMEOUT_MS }, log);
      connection = await connect({ servers: system.nats.directUrls.split(','), name: 'nemesis-producer', reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 5_000 });
    } catch (error) {
      log(`the cluster could not be set up: ${error instanceof Error ? error.message : String(error)}`);
      return 2;
    }
    const plan = planFaults(args.seed, { durationMs: args.durationMs, leaseMs: args.leaseMs, nodes: NODE_IDS, natsServers: NATS_SERVERS });
    log(`schedule: ${plan.length} faults`);

    startedAt = Date.now();
    const loopLag = watchLoopLag(startedAt);
    const targets = system.nodes.map((node) => ({ id: node.id, url: node.url }));
    const common = { seed: args.seed, rate: args.rate, maxInFlight: MAX_IN_FLIGHT, projects: system.projects };
    producers.push(startProducer({ ...common, kind: 'http', targets }));
    producers.push(startProducer({ ...common, kind: 'nats', nats: { connection, subjectPrefix: INGEST.subjectPrefix, partitions: PARTITIONS } }));
    const nemesis = runNemesis(plan, system, startedAt, log);

    await pause(args.durationMs);
    for (const producer of producers) producer.stop();
    const producersStoppedMs = Date.now() - startedAt;
    log('producers stopped; waiting for the last faults to end');
    nemesis.cancel();
    await nemesis.done;
    await healAll(system, Date.now() + 120_000, log);
    // Bounded by --settle too: a cluster that never gets there (findings 5 and 6) is checked as it is.
    await system.waitForOwnership(args.settleMs).catch((error: unknown) => log(`after the heal: ${error instanceof Error ? error.message : String(error)}`));
    const healedMs = Date.now() - startedAt;
    log('healed: every node and NATS server up, every link whole');

    const unackedDeadline = Date.now() + UNACKED_GRACE_MS;
    while (Date.now() < unackedDeadline && producers.some((producer) => [...producer.events.values()].some((event) => event.ackedAt === null))) await pause(250);
    await Promise.all(producers.map((producer) => producer.giveUp()));
    const settled = await settle(system, producers, Date.now() + args.settleMs);
    const settledMs = Date.now() - startedAt;
    log(settled ? 'delivery settled' : `delivery had not settled after ${args.settleMs / 1000} s`);

    const views = await readViews(system);
    const checkedAt = Date.now();
    const receipts = system.projects.flatMap((project) => project.receiver.receipts(project.projectId));
    const events = producers.flatMap((producer) => [...producer.events.values()]);
    const otherViolations: Violation[] = [];
    for (const node of system.nodes) {
      for (const exit of node.unexpectedExits) otherViolations.push({ check: 'unexpected-exit', message: `${node.id} exited by itself at ${exit.at - startedAt} ms (code ${exit.code}, signal ${exit.signal}); stderr: ${exit.stderr.slice(-500)}` });
    }
    for (const route of await system.nats.routesBypassed()) otherViolations.push({ check: 'partition-bypassed', message: route });
    const window = { beforeMs: DELIVERY_TIMEOUT_MS + 1_000, afterMs: 2 * args.leaseMs + 5_000 };
    const result = checkHistory({ events, receipts, views, faults: nemesis.executed, startedAt, checkedAt, window, overdueMs: OVERDUE_MS, senderTimeoutMs: DELIVERY_TIMEOUT_MS, settled, otherViolations });
    // Who owns what at the end: the evidence of a partition without a reachable owner, or still at work.
    const ownership = await readOwnership(connection, system.nodes, PARTITIONS).catch((error: unknown) => error as Error);
    const trouble = ownership instanceof Error ? [`ownership not read: ${ownership.message}`] : ownershipTrouble(ownership);
    for (const violation of result.violations) if ((violation.check === 'node-unreadable' || violation.check === 'not-settled') && trouble.length > 0) violation.evidence = trouble;
    await addEvidence(system, result.violations, events, receipts, startedAt, { connection, manager: await jetstreamManager(connection), stream: INGEST.stream, durable: INGEST.durable, partitions: PARTITIONS });

    const metrics = await readMetrics(system);
    // The replicas are read from the stores of stopped servers: stop everything now.
    await connection.close().catch(() => {});
    connection = null;
    const stopping = system;
    system = null;
    await stopping.stop();
    const compared = compareReplicas(
      [
        { name: INGEST.stream, missingIsDeleted: false },
        // Snapshots purge the changelog: a message one replica has compacted away is no divergence.
        { name: CHANGELOG_STREAM, missingIsDeleted: true },
      ],
      (stream) => readStreamReplicas(join(dir, 'nats'), stream),
    );
    const { hookline, attributed } = attributeViolations(result.violations, events, INGEST.stream, compared.divergent.get(INGEST.stream) ?? []);
    const natsFaults: NatsFaults = { compared: compared.compared, faults: compared.faults, attributed, errors: compared.errors };
    result.violations = hookline;
    for (const error of natsFaults.errors) log(`replicas not compared: ${error}`);

    const firstReceived = firstReceipts(receipts);
    const latencies = events.flatMap((event) => {
      const first = firstReceived.get(event.id);
      return event.ackedAt === null || first === undefined ? [] : [Math.max(0, first - event.ackedAt)];
    }).sort((a, b) => a - b);
    loopLag.stop();
    const worstLag = loopLag.perSecond.reduce((worst, lagMs, second) => (lagMs > worst.lagMs ? { lagMs, second } : worst), { lagMs: 0, second: 0 });
    log(`the nemesis's own event loop stalled ${worstLag.lagMs} ms at worst (second ${worstLag.second})`);
    const options: RunOptions = { seed: args.seed, durationMs: args.durationMs, ratePerProducer: args.rate, leaseMs: args.leaseMs, partitions: PARTITIONS, settleMs: args.settleMs };
    const report: RunReport = {
      options,
      reproduce,
      revision: revisionOfCheckout(),
      startedAt: new Date(startedAt).toISOString(),
      milestones: { producersStoppedMs, healedMs, settledMs },
      settled,
      faults: nemesis.executed,
      result,
      natsFaults,
      latency: { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: latencies.at(-1) ?? null },
      shed: Object.fromEntries(producers.map((producer) => [producer.kind, producer.shed])),
      ownership: ownership instanceof Error ? [] : ownership,
      failedStarts: stopping.nodes.flatMap((node) => node.startFailures().map((failure) => ({ nodeId: node.id, atMs: failure.at - startedAt, reason: failure.reason }))),
      window,
      seconds: secondsOfRun(events, receipts, startedAt, checkedAt - startedAt, loopLag.perSecond),
    };
    writeReport(args.reportDir, report, { events, receipts }, { nodes: new Map(stopping.nodes.map((node) => [node.id, node.logLines()])), metrics, run: runLog });
    const { counts } = result;
    log(`JetStream acknowledged ${events.filter((event) => event.natsSeq !== null).length} NATS events, up to stream sequence ${Math.max(0, ...events.map((event) => event.natsSeq ?? 0))}`);
    log(`${counts.acked} acknowledged of ${counts.sent} sent, ${counts.deliveredEvents} received, ${counts.duplicates} duplicates (${counts.explainedDuplicates} near a fault), ${result.violations.length} violations of Hookline${attributed.length > 0 ? `, ${attributed.length} more put down to a fault of NATS` : ''}`);
    log(`report: ${join(args.reportDir, 'report.md')}`);
    for (const fault of natsFaults.faults) {
      console.error(`nemesis: WARNING: a fault of NATS, not of Hookline: the replicas of ${fault.stream} on ${fault.servers.join(', ')} differ from the others' at ${fault.sequences} sequences, ${fault.fromSeq} to ${fault.toSeq}; ${attributed.filter((each) => each.stream === fault.stream).length} violations put down to it (report: "NATS faults")`);
    }
    for (const each of attributed.slice(0, 5)) console.error(`nemesis: NATS fault: ${each.violation.check} ${each.violation.eventId} at seq ${each.seq}: ${describeCopies(each.copies)}`);
    if (result.violations.length === 0) return 0;
    for (const violation of result.violations.slice(0, 20)) console.error(`violation ${violation.check}: ${violation.message}`);
    console.error(`nemesis: ${result.violations.length} violations with seed ${args.seed}; reproduce with: ${reproduce}`);
    return 1;
  } finally {
    await Promise.all(producers.map((producer) => producer.giveUp()));
    await connection?.close().catch(() => {});
    await system?.stop();
    if (args.keep) log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

let parsed: Arguments | 'help';
try {
  parsed = parseArguments(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`nemesis: ${error instanceof Error ? error.message : String(error)}\nRun "npm run nemesis -- --help" for usage.\n`);
  process.exit(2);
}
if (parsed === 'help') {
  process.stdout.write(USAGE);
  process.exit(0);
}
process.exit(await run(parsed));

/** The checkout's commit as `git describe --always --dirty` gives it, or `unknown` outside git. */
function revisionOfCheckout(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
