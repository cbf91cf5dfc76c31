import { seededPrng, type Prng } from './prng.js';

/**
 * The nemesis's schedule: which faults happen when, drawn from the seed alone, so a run is
 * reproduced by its seed (the processes' own timing still varies from run to run, as in Jepsen).
 *
 * Two lanes run side by side, so at most two faults are active at once:
 * - the Hookline lane: a node killed (kill -9, restarted after the fault), paused (SIGSTOP for
 *   longer than the lease, then SIGCONT: the zombie owner), cut off from every NATS server, or
 *   slowed on its NATS links;
 * - the NATS lane: a server killed (kill -9, restarted), isolated from both peers or cut from one
 *   (a bridge: each side still reaches the third), or a route between two servers slowed.
 * The NATS lane never touches more than one server, or one link, at a time: two of the three always
 * form a quorum. Each lane waits a random gap between its faults, so the cluster makes progress.
 */

export const HOOKLINE_FAULTS = ['kill-node', 'pause-node', 'partition-node', 'slow-node'] as const;
export const NATS_FAULTS = ['kill-nats', 'partition-nats', 'slow-route'] as const;
export type FaultKind = (typeof HOOKLINE_FAULTS)[number] | (typeof NATS_FAULTS)[number];

export interface PlannedFault {
  /** 1, 2, … in order of start. */
  id: number;
  kind: FaultKind;
  /** A node id (`node-2`), a NATS server (`n3`), or a pair of servers joined by `~` (`n1~n2`). */
  target: string;
  /** Start, from the beginning of the run. */
  atMs: number;
  durationMs: number;
  /** The delay a `slow-*` fault adds to each direction of its links. */
  latencyMs?: number;
}

export interface ScheduleOptions {
  durationMs: number;
  /** HOOKLINE_LEASE_TTL of the nodes: a pause outlasts it. */
  leaseMs: number;
  nodes: readonly string[];
  natsServers: readonly string[];
}

/** How long the cluster runs before the first fault, and stays quiet after the last, at most. */
const QUIET_START_MS = 5_000;
const QUIET_END_MS = 3_000;

const between = (prng: Prng, min: number, max: number) => prng.int(Math.round(min), Math.round(max));

function drawHooklineFault(prng: Prng, options: ScheduleOptions): Omit<PlannedFault, 'id' | 'atMs'> {
  const kind = prng.pick(HOOKLINE_FAULTS, [3, 2, 3, 2]);
  const target = prng.pick(options.nodes);
  const lease = options.leaseMs;
  if (kind === 'kill-node') return { kind, target, durationMs: between(prng, 2_000, 6_000) };
  if (kind === 'pause-node') return { kind, target, durationMs: between(prng, lease * 1.5, lease * 3) };
  if (kind === 'partition-node') return { kind, target, durationMs: between(prng, 2_000, Math.max(3_000, lease * 3)) };
  return { kind, target, durationMs: between(prng, 2_000, 8_000), latencyMs: between(prng, 50, 500) };
}

function drawNatsFault(prng: Prng, options: ScheduleOptions): Omit<PlannedFault, 'id' | 'atMs'> {
  const kind = prng.pick(NATS_FAULTS, [3, 3, 2]);
  const server = prng.pick(options.natsServers);
  const peer = prng.pick(options.natsServers.filter((other) => other !== server));
  const pair = [server, peer].sort().join('~');
  if (kind === 'kill-nats') return { kind, target: server, durationMs: between(prng, 3_000, 8_000) };
  if (kind === 'partition-nats') return { kind, target: prng.next() < 0.5 ? server : pair, durationMs: between(prng, 3_000, 10_000) };
  return { kind, target: pair, durationMs: between(prng, 2_000, 8_000), latencyMs: between(prng, 50, 400) };
}

/** The faults of a run of `durationMs`, in order of start. */
export function planFaults(seed: number, options: ScheduleOptions): PlannedFault[] {
  const prng = seededPrng(seed);
  const firstAt = Math.min(QUIET_START_MS, options.durationMs * 0.15);
  const endBy = options.durationMs - Math.min(QUIET_END_MS, options.durationMs * 0.1);
  const lanes = [
    { draw: drawHooklineFault, gap: [1_500, 5_000] as const, at: firstAt },
    { draw: drawNatsFault, gap: [3_000, 8_000] as const, at: firstAt + between(prng, 0, 4_000) },
  ];
  const planned: Array<Omit<PlannedFault, 'id'>> = [];
  for (const lane of lanes) {
    for (;;) {
      const fault = lane.draw(prng, options);
      // Whole or not at all: a pause cut short would not outlast the lease.
      if (lane.at + fault.durationMs > endBy) break;
      planned.push({ ...fault, atMs: lane.at });
      lane.at += fault.durationMs + between(prng, lane.gap[0], lane.gap[1]);
    }
  }
  return planned.sort((a, b) => a.atMs - b.atMs).map((fault, index) => ({ id: index + 1, ...fault }));
}
