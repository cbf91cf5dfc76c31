import type { ExecutedFault } from './nemesis.js';
import type { ProducedEvent } from './producers.js';
import type { Receipt } from './receivers.js';
import type { FaultKind } from './schedule.js';

/**
 * The run second by second (acknowledgements, first deliveries and their latency), and the picture
 * of it: the faults on a lane per target, above the throughput and the latency on the same time
 * axis, as a standalone SVG written here (no chart library).
 */

export interface SecondOfRun {
  /** Seconds from the start of the run. */
  second: number;
  acked: number;
  /** Events first received (verified 2xx) in this second. */
  delivered: number;
  /** Acknowledgement to first receipt of those events, ms: median and highest; null when none. */
  latencyP50Ms: number | null;
  latencyMaxMs: number | null;
  /** How late the nemesis's own event loop ran at worst in this second (loop-lag.ts), ms. */
  nemesisLagMs: number;
}

/** Moments worth a line across the picture, from the start of the run (ms). */
export interface Milestones {
  producersStoppedMs: number;
  healedMs: number;
  settledMs: number;
}

/** When each event was first received (verified, answered 2xx), epoch ms, by event id. */
export function firstReceipts(receipts: readonly Receipt[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const receipt of receipts) {
    if (!receipt.verified || receipt.status < 200 || receipt.status >= 300) continue;
    const seen = first.get(receipt.eventId);
    if (seen === undefined || receipt.receivedAt < seen) first.set(receipt.eventId, receipt.receivedAt);
  }
  return first;
}

export function secondsOfRun(events: readonly ProducedEvent[], receipts: readonly Receipt[], startedAt: number, endMs: number, loopLagMs: readonly number[]): SecondOfRun[] {
  const seconds: SecondOfRun[] = Array.from({ length: Math.ceil(endMs / 1000) + 1 }, (_, second) => ({ second, acked: 0, delivered: 0, latencyP50Ms: null, latencyMaxMs: null, nemesisLagMs: loopLagMs[second] ?? 0 }));
  const bucket = (epochMs: number) => seconds[Math.min(seconds.length - 1, Math.max(0, Math.floor((epochMs - startedAt) / 1000)))]!;
  const firstReceipt = firstReceipts(receipts);
  const latencies = new Map<SecondOfRun, number[]>();
  for (const event of events) {
    if (event.ackedAt !== null) bucket(event.ackedAt).acked++;
    const received = firstReceipt.get(event.id);
    if (received === undefined) continue;
    const second = bucket(received);
    second.delivered++;
    if (event.ackedAt === null) continue;
    const list = latencies.get(second) ?? [];
    list.push(Math.max(0, received - event.ackedAt));
    latencies.set(second, list);
  }
  for (const [second, list] of latencies) {
    list.sort((a, b) => a - b);
    second.latencyP50Ms = list[Math.floor(list.length / 2)]!;
    second.latencyMaxMs = list[list.length - 1]!;
  }
  return seconds;
}

const FAULT_COLOURS: Record<FaultKind, string> = {
  'kill-node': '#d62728',
  'pause-node': '#9467bd',
  'partition-node': '#ff7f0e',
  'slow-node': '#bcbd22',
  'kill-nats': '#8c564b',
  'partition-nats': '#e377c2',
  'slow-route': '#17becf',
};

const WIDTH = 1100;
const LEFT = 120;
const RIGHT = 20;
const LANE_HEIGHT = 18;
const CHART_HEIGHT = 150;
const GAP = 36;

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fixed = (value: number) => Number(value.toFixed(1));

/** A round step for about `count` ticks up to `max`. */
function tickStep(max: number, count: number): number {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  return ([1, 2, 5, 10].map((factor) => factor * power).find((step) => step >= raw) ?? 10 * power);
}

export function timelineSvg(faults: readonly ExecutedFault[], seconds: readonly SecondOfRun[], milestones: Milestones, title: string): string {
  const endMs = Math.max(1000, seconds.length * 1000);
  const x = (ms: number) => fixed(LEFT + ((WIDTH - LEFT - RIGHT) * Math.min(ms, endMs)) / endMs);
  const lanes = [...new Set(faults.map((fault) => fault.target))].sort();
  const lanesTop = 64;
  const lanesBottom = lanesTop + Math.max(1, lanes.length) * LANE_HEIGHT;
  const throughputTop = lanesBottom + GAP;
  const latencyTop = throughputTop + CHART_HEIGHT + GAP;
  const height = latencyTop + CHART_HEIGHT + 60;
  const parts: string[] = [];

  parts.push(`<text x="${LEFT}" y="22" font-size="14" font-weight="bold">${escapeXml(title)}</text>`);
  lanes.forEach((lane, index) => {
    const y = lanesTop + index * LANE_HEIGHT;
    parts.push(`<text x="${LEFT - 8}" y="${y + 13}" text-anchor="end">${escapeXml(lane)}</text>`);
    parts.push(`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y + LANE_HEIGHT}" y2="${y + LANE_HEIGHT}" stroke="#eee"/>`);
  });
  for (const fault of faults) {
    if (fault.startedMs === null) continue;
    const end = fault.endedMs ?? endMs;
    const y = lanesTop + lanes.indexOf(fault.target) * LANE_HEIGHT + 2;
    const label = `#${fault.id} ${fault.kind} ${fault.target}${fault.latencyMs ? ` +${fault.latencyMs} ms` : ''}: ${(fault.startedMs / 1000).toFixed(1)}-${(end / 1000).toFixed(1)} s`;
    const colour = FAULT_COLOURS[fault.kind];
    // Solid while the fault was on as planned; paler while the system came back (a restart until it served).
    const plannedEnd = Math.min(end, Math.max(fault.startedMs, fault.atMs + fault.durationMs));
    parts.push(`<rect x="${x(fault.startedMs)}" y="${y}" width="${Math.max(1, x(plannedEnd) - x(fault.startedMs))}" height="${LANE_HEIGHT - 4}" fill="${colour}"><title>${escapeXml(label)}</title></rect>`);
    if (end > plannedEnd) parts.push(`<rect x="${x(plannedEnd)}" y="${y}" width="${Math.max(1, x(end) - x(plannedEnd))}" height="${LANE_HEIGHT - 4}" fill="${colour}" opacity="0.4"><title>${escapeXml(`${label} (coming back)`)}</title></rect>`);
    parts.push(`<rect x="${x(fault.startedMs)}" y="${throughputTop}" width="${Math.max(1, x(end) - x(fault.startedMs))}" height="${latencyTop + CHART_HEIGHT - throughputTop}" fill="${colour}" opacity="0.08"/>`);
  }

  const chart = (top: number, label: string, series: Array<{ name: string; colour: string; values: Array<number | null> }>, unit: string) => {
    const max = Math.max(1, ...series.flatMap((each) => each.values.filter((value): value is number => value !== null)));
    const step = tickStep(max, 4);
    const ceiling = Math.ceil(max / step) * step;
    const y = (value: number) => fixed(top + CHART_HEIGHT - (CHART_HEIGHT * value) / ceiling);
    parts.push(`<text x="${LEFT}" y="${top - 8}" font-weight="bold">${escapeXml(label)}</text>`);
    for (let tick = 0; tick <= ceiling + 1e-9; tick += step) {
      parts.push(`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(tick)}" y2="${y(tick)}" stroke="#ddd"/>`);
      parts.push(`<text x="${LEFT - 8}" y="${y(tick) + 4}" text-anchor="end">${fixed(tick)}${unit}</text>`);
    }
    series.forEach((each, index) => {
      // A line per run of seconds with a value: a second without one (nothing delivered) breaks it.
      const runs: string[][] = [[]];
      each.values.forEach((value, second) => {
        if (value === null) runs.push([]);
        else runs[runs.length - 1]!.push(`${x(second * 1000 + 500)},${y(value)}`);
      });
      for (const points of runs) {
        if (points.length === 1) parts.push(`<circle cx="${points[0]!.split(',')[0]}" cy="${points[0]!.split(',')[1]}" r="1.5" fill="${each.colour}"/>`);
        else if (points.length > 1) parts.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${each.colour}" stroke-width="1.5"/>`);
      }
      const legendX = WIDTH - RIGHT - 250 + index * 80;
      parts.push(`<rect x="${legendX}" y="${top - 17}" width="12" height="3" fill="${each.colour}"/>`);
      parts.push(`<text x="${legendX + 16}" y="${top - 12}" font-size="11">${escapeXml(each.name)}</text>`);
    });
  };
  chart(throughputTop, 'Throughput (events/s)', [
    { name: 'acked', colour: '#999', values: seconds.map((second) => second.acked) },
    { name: 'delivered', colour: '#1f77b4', values: seconds.map((second) => second.delivered) },
  ], '');
  chart(latencyTop, 'Latency, ack to first receipt (s)', [
    { name: 'median', colour: '#2ca02c', values: seconds.map((second) => (second.latencyP50Ms === null ? null : second.latencyP50Ms / 1000)) },
    { name: 'max', colour: '#d62728', values: seconds.map((second) => (second.latencyMaxMs === null ? null : second.latencyMaxMs / 1000)) },
    { name: 'nemesis stall', colour: '#7f7f7f', values: seconds.map((second) => second.nemesisLagMs / 1000) },
  ], '');

  const marks = [['producers stop', milestones.producersStoppedMs], ['healed', milestones.healedMs], ['settled', milestones.settledMs]] as const;
  marks.forEach(([name, ms], index) => {
    // Each label a line lower than the one before: two marks a second apart would print over each other.
    const labelY = lanesTop - 4 - (marks.length - 1 - index) * 11;
    parts.push(`<line x1="${x(ms)}" x2="${x(ms)}" y1="${labelY + 2}" y2="${latencyTop + CHART_HEIGHT}" stroke="#333" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${x(ms) + 3}" y="${labelY}" font-size="10">${escapeXml(name)}</text>`);
  });
  const step = tickStep(endMs / 1000, 10);
  for (let second = 0; second <= endMs / 1000; second += step) {
    parts.push(`<text x="${x(second * 1000)}" y="${latencyTop + CHART_HEIGHT + 16}" text-anchor="middle">${second}s</text>`);
  }
  const legend = Object.entries(FAULT_COLOURS).map(([kind, colour], index) => {
    const left = LEFT + index * 135;
    return `<rect x="${left}" y="${height - 26}" width="12" height="12" fill="${colour}"/><text x="${left + 16}" y="${height - 16}" font-size="11">${kind}</text>`;
  });
  parts.push(...legend);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
