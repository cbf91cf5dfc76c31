import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHECKS, type CheckName, type CheckResult } from './checks.js';
import { describeCopies, type NatsFaults } from './nats-faults.js';
import type { ExecutedFault } from './nemesis.js';
import type { PartitionOwnership } from './ownership.js';
import type { ProducedEvent } from './producers.js';
import type { Receipt } from './receivers.js';
import { timelineSvg, type Milestones, type SecondOfRun } from './timeline.js';

/**
 * The report of a run, in its directory: report.json (everything, for programs), report.md (for
 * people: the verdict, the counts, each violation with its evidence, the faults, the duplicates),
 * timeline.svg, history.jsonl (every event sent and every request received) and logs/.
 * docs/nemesis.md says how to read them.
 */

export interface RunOptions {
  seed: number;
  durationMs: number;
  ratePerProducer: number;
  leaseMs: number;
  partitions: number;
  settleMs: number;
}

export interface RunReport {
  options: RunOptions;
  /** The command that runs this seed again. */
  reproduce: string;
  /** The commit the nodes ran (`git describe`), `-dirty` when the working tree had changes. */
  revision: string;
  startedAt: string;
  milestones: Milestones;
  settled: boolean;
  faults: readonly ExecutedFault[];
  /** Hookline's violations only: those a NATS fault explains are under `natsFaults.attributed`. */
  result: CheckResult;
  /** The streams' replicas compared once the servers stopped: faults of NATS, and the violations they explain. */
  natsFaults: NatsFaults;
  latency: { p50Ms: number | null; p99Ms: number | null; maxMs: number | null };
  /** Events the producers did not send because too many waited for their ack. */
  shed: Record<string, number>;
  /**
   * Node starts that did not serve (a restart after a kill, or at the heal): not a check, since a
   * supervisor starts a node again, but each is worth reading (a start that gives up while NATS
   * elects a leader, say).
   */
  failedStarts: Array<{ nodeId: string; atMs: number; reason: string }>;
  /** Each partition's lease holder (KV) and the nodes serving it (/healthz), read once the checks began. */
  ownership: readonly PartitionOwnership[];
  /** The duplicate window: how far before a fault began and after it ended a first receipt may lie. */
  window: { beforeMs: number; afterMs: number };
  seconds: readonly SecondOfRun[];
}

const seconds = (ms: number | null) => (ms === null ? '–' : `${(ms / 1000).toFixed(1)} s`);

function markdown(report: RunReport): string {
  const { result, options } = report;
  const { counts } = result;
  const { natsFaults } = report;
  const warning = natsFaults.faults.length === 0 ? '' : ` **Warning**: a fault of NATS (its stream replicas diverge), ${natsFaults.attributed.length} violation${natsFaults.attributed.length === 1 ? '' : 's'} put down to it: see [NATS faults](#nats-faults).`;
  const verdict = (result.violations.length === 0 ? '**PASS**: no violation of Hookline.' : `**FAIL**: ${result.violations.length} violation${result.violations.length === 1 ? '' : 's'} of Hookline.`) + warning;
  const lines = [
    `# Nemesis run, seed ${options.seed}`,
    '',
    verdict,
    '',
    `Reproduce: \`${report.reproduce}\` (Hookline at ${report.revision})`,
    '',
    `Started ${report.startedAt}; ${seconds(options.durationMs)} of load and faults, ${options.ratePerProducer} events/s per producer (HTTP and NATS), `,
    `three Hookline nodes on a three-server NATS cluster (replicas 3), ${options.partitions} partitions, lease ${seconds(options.leaseMs)}. `,
    `Healed at ${seconds(report.milestones.healedMs)}; delivery ${report.settled ? 'settled' : 'had not settled'} at ${seconds(report.milestones.settledMs)}.`,
    '',
    '![timeline](timeline.svg)',
    '',
    '## Counts',
    '',
    '| | |',
    '|---|---|',
    `| events sent | ${counts.sent} (shed while too many waited: ${Object.entries(report.shed).map(([kind, shed]) => `${kind} ${shed}`).join(', ')}) |`,
    `| acknowledged | ${counts.acked} (HTTP ${counts.ackedHttp}, NATS ${counts.ackedNats}) |`,
    `| requests to the receivers | ${counts.requests} |`,
    `| receipts (verified, answered 2xx) | ${counts.receipts} |`,
    `| events received | ${counts.deliveredEvents} |`,
    `| deliveries listed | ${counts.deliveries} (${Object.entries(counts.byStatus).map(([status, count]) => `${status} ${count}`).join(', ')}) |`,
    `| duplicates | ${counts.duplicates} (${counts.explainedDuplicates} inside a fault's window) |`,
    `| latency, ack to first receipt | median ${seconds(report.latency.p50Ms)}, p99 ${seconds(report.latency.p99Ms)}, max ${seconds(report.latency.maxMs)} |`,
    `| the nemesis's own longest stall (its proxies and receivers stop meanwhile) | ${Math.max(0, ...report.seconds.map((second) => second.nemesisLagMs))} ms |`,
    '',
    '## Checks',
    '',
    '| check | violations |',
    '|---|---|',
    ...(Object.keys(CHECKS) as CheckName[]).map((check) => `| ${check}: ${CHECKS[check]} | ${result.violations.filter((violation) => violation.check === check).length} |`),
    '',
  ];
  if (result.violations.length > 0) {
    lines.push('## Violations', '');
    for (const violation of result.violations) {
      lines.push(`- **${violation.check}**: ${violation.message}`);
      if (violation.evidence?.length) lines.push('', '  ```', ...violation.evidence.map((line) => `  ${line}`), '  ```', '');
    }
    lines.push('');
  }
  lines.push(...natsFaultLines(natsFaults));
  lines.push('## Faults', '', '| # | kind | target | planned | applied | undone | note |', '|---|---|---|---|---|---|---|');
  for (const fault of report.faults) {
    const kind = `${fault.kind}${fault.latencyMs ? ` (+${fault.latencyMs} ms)` : ''}`;
    lines.push(`| ${fault.id} | ${kind} | ${fault.target} | ${seconds(fault.atMs)} for ${seconds(fault.durationMs)} | ${seconds(fault.startedMs)} | ${seconds(fault.endedMs)} | ${fault.note ?? ''} |`);
  }
  lines.push('', '## Node starts that failed', '');
  if (report.failedStarts.length === 0) lines.push('None.');
  for (const start of report.failedStarts) lines.push(`- ${start.nodeId}, started at ${seconds(start.atMs)}: ${start.reason.replaceAll('\n', ' ')}`);
  lines.push('', '## Duplicates', '');
  lines.push(
    `A duplicate is an event its receiver answered 2xx more than once: under one webhook-id (a delivery sent again) or under two (two deliveries of one event). Each is explained by the first fault whose window, from ${seconds(report.window.beforeMs)} before it began to ${seconds(report.window.afterMs)} after it ended, holds the first receipt, or by its sender's timeout when the first receipt came after the sender had given that attempt up; one nothing explains is a violation.`,
    '',
  );
  if (result.duplicates.length === 0) lines.push('None.');
  else {
    lines.push('| event | kind | webhook-ids | receipts | fault |', '|---|---|---|---|---|');
    for (const duplicate of result.duplicates) {
      lines.push(`| ${duplicate.eventId} | ${duplicate.kind} | ${duplicate.webhookIds.join(', ')} | ${duplicate.receiptsMs.map((ms) => seconds(ms)).join(', ')} | ${duplicate.explainedBy === null ? '**none**' : duplicate.explainedBy === 'sender-timeout' ? 'sender timed out' : `#${duplicate.explainedBy}`} |`);
    }
  }
  lines.push('', 'Node logs and their /metrics at the end: `logs/`. Everything above, and each second of the run: `report.json`; every event sent and every request received: `history.jsonl`.', '');
  return lines.join('\n');
}

/** The "NATS faults" section: each stream's divergent replicas, then each violation put down to them with its evidence. */
function natsFaultLines(natsFaults: NatsFaults): string[] {
  const lines = ['## NATS faults', ''];
  const compared = natsFaults.compared.map(({ stream, replicas }) => `${stream} (${Object.entries(replicas).map(([server, held]) => `${server} ${held.messages} messages up to ${held.lastSeq}`).join(', ')})`);
  lines.push(`The replicas of each stream, read from the servers' stores once they stopped, must hold the same message at each sequence up to the last one all hold. Compared: ${compared.join('; ') || 'none'}.`, '');
  for (const error of natsFaults.errors) lines.push(`- not compared: ${error}`);
  if (natsFaults.faults.length === 0) return [...lines, natsFaults.errors.length > 0 ? '' : 'None: the replicas agree.', ''];
  lines.push('| stream | servers that differ | from sequence | to | sequences |', '|---|---|---|---|---|');
  for (const fault of natsFaults.faults) lines.push(`| ${fault.stream} | ${fault.servers.join(', ')} | ${fault.fromSeq} | ${fault.toSeq} | ${fault.sequences} |`);
  lines.push('');
  for (const fault of natsFaults.faults) {
    lines.push(`The first sequences of ${fault.stream} where the replicas differ:`, '', '```', ...fault.first.map(({ seq, copies }) => `seq ${seq}: ${describeCopies(copies)}`), '```', '');
  }
  lines.push(`Violations put down to them (not Hookline's; each event acknowledged by JetStream at a sequence where the replicas differ): ${natsFaults.attributed.length === 0 ? 'none.' : ''}`, '');
  for (const { violation, stream, seq, copies } of natsFaults.attributed) {
    lines.push(`- **${violation.check}**: ${violation.message}`, '', '  ```', `  ${stream} seq ${seq}: ${describeCopies(copies)}`, ...(violation.evidence ?? []).map((line) => `  ${line}`), '  ```', '');
  }
  lines.push('');
  return lines;
}

/** Everything the checks read from the producers and the receivers, for a post-mortem. */
export interface RunHistory {
  events: readonly ProducedEvent[];
  receipts: readonly Receipt[];
}

export interface RunLogs {
  /** Each node's log lines, by node id. */
  nodes: ReadonlyMap<string, readonly string[]>;
  /** Each node's /metrics at the end, by node id. */
  metrics: ReadonlyMap<string, string>;
  /** The nemesis's own lines. */
  run: readonly string[];
}

export function writeReport(dir: string, report: RunReport, history: RunHistory, logs: RunLogs): void {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  writeFileSync(join(dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  // One record a line: a long run's history is tens of megabytes, and grep reads it line by line.
  writeFileSync(join(dir, 'history.jsonl'), [...history.events.map((event) => JSON.stringify({ event })), ...history.receipts.map((receipt) => JSON.stringify({ receipt }))].join('\n') + '\n');
  writeFileSync(join(dir, 'report.md'), markdown(report));
  writeFileSync(join(dir, 'timeline.svg'), timelineSvg(report.faults, report.seconds, report.milestones, `Nemesis seed ${report.options.seed}: faults, throughput and latency`));
  for (const [nodeId, lines] of logs.nodes) writeFileSync(join(dir, 'logs', `${nodeId}.log`), `${lines.join('\n')}\n`);
  for (const [nodeId, text] of logs.metrics) writeFileSync(join(dir, 'logs', `${nodeId}.metrics`), text);
  writeFileSync(join(dir, 'logs', 'nemesis.log'), `${logs.run.join('\n')}\n`);
}
