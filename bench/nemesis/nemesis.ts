import type { LinkProxy } from './link-proxy.js';
import type { NemesisNats } from './nats-cluster.js';
import type { NemesisNode } from './nodes.js';
import type { PlannedFault } from './schedule.js';

/**
 * Carries out a schedule of faults (schedule.ts) against the running system, and records when each
 * actually began and ended, from the start of the run. A fault ends when the system is back as it
 * was: a killed process restarted and serving, a paused one continued, a link healed. A fault whose
 * target is not in a state to take it (a node still down from an earlier restart that failed) is
 * recorded as skipped. `healAll()` undoes whatever is left, at the end of the run.
 */

export interface ExecutedFault extends PlannedFault {
  /** When it was applied, from the start of the run; null when skipped. */
  startedMs: number | null;
  /** When it was undone (the restart answered, the link healed). */
  endedMs: number | null;
  /** Why it was skipped, or what went wrong undoing it. */
  note: string | null;
}

export interface System {
  nodes: readonly NemesisNode[];
  nats: NemesisNats;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const describe = (error: unknown) => (error instanceof Error ? error.message.split('\n')[0]! : String(error)).slice(0, 300);

/** The links a fault acts on: a node's to every NATS server, or the route links of a server or a pair. */
function linksOf(fault: PlannedFault, system: System): LinkProxy[] {
  if (fault.kind === 'partition-node' || fault.kind === 'slow-node') return [...nodeOf(fault, system).natsLinks.values()];
  const [first, second] = fault.target.split('~') as [string, string | undefined];
  const names = system.nats.servers.map((server) => server.name);
  const peers = second !== undefined ? [second] : names.filter((name) => name !== first);
  return peers.flatMap((peer) => [system.nats.routeLink(first, peer), system.nats.routeLink(peer, first)]);
}

function nodeOf(fault: PlannedFault, system: System): NemesisNode {
  const node = system.nodes.find((each) => each.id === fault.target);
  if (!node) throw new Error(`no node ${fault.target}`);
  return node;
}

/** How long a supervisor waits before starting a node whose start failed (deploy/systemd: RestartSec=2). */
const RESTART_DELAY_MS = 2_000;

/**
 * Starts a killed node again as its supervisor would (systemd's Restart=on-failure, compose's
 * restart policy): a start that fails is tried again after RESTART_DELAY_MS, while `going` (after
 * the load, the heal takes over). Each failed start stays in the report ("Node starts that
 * failed"); the first is thrown once the node serves, so that the fault's note names it.
 */
async function superviseStart(node: NemesisNode, going: () => boolean): Promise<void> {
  let firstFailure: unknown = null;
  let failures = 0;
  while (node.state === 'down' && going()) {
    try {
      await node.start();
    } catch (error) {
      firstFailure ??= error;
      failures++;
      await pause(RESTART_DELAY_MS);
    }
  }
  if (firstFailure) throw new Error(`${failures} start${failures === 1 ? '' : 's'} failed before it served again${node.state === 'running' ? '' : ' (then left to the heal)'}; the first: ${describe(firstFailure)}`, { cause: firstFailure });
}

/** Applies `fault`; answers what undoes it, or why it was skipped. */
function apply(fault: PlannedFault, system: System, going: () => boolean): Promise<(() => Promise<void>) | string> | (() => Promise<void>) | string {
  switch (fault.kind) {
    case 'kill-node': {
      const node = nodeOf(fault, system);
      if (node.state !== 'running') return `${node.id} was ${node.state}`;
      return node.kill9().then(() => () => superviseStart(node, going));
    }
    case 'pause-node': {
      const node = nodeOf(fault, system);
      if (node.state !== 'running') return `${node.id} was ${node.state}`;
      node.pause();
      return async () => node.resume();
    }
    case 'kill-nats': {
      const server = system.nats.server(fault.target);
      if (!server.running) return `${server.name} was down`;
      return server.kill9().then(() => () => server.start());
    }
    case 'partition-node':
    case 'partition-nats': {
      const links = linksOf(fault, system);
      for (const link of links) link.cut();
      return async () => links.forEach((link) => link.heal());
    }
    case 'slow-node':
    case 'slow-route': {
      const links = linksOf(fault, system);
      for (const link of links) link.delay(fault.latencyMs ?? 0);
      return async () => links.forEach((link) => link.delay(0));
    }
  }
}

export interface NemesisRun {
  readonly executed: readonly ExecutedFault[];
  /** Resolves once every fault of the schedule has ended (or was skipped). */
  readonly done: Promise<void>;
  /** Faults not begun yet are skipped from now on. */
  cancel(): void;
}

/** Runs `plan` from `startedAt` (epoch ms). */
export function runNemesis(plan: readonly PlannedFault[], system: System, startedAt: number, log: (line: string) => void): NemesisRun {
  const executed: ExecutedFault[] = plan.map((fault) => ({ ...fault, startedMs: null, endedMs: null, note: null }));
  let cancelled = false;
  const since = () => Date.now() - startedAt;
  const runOne = async (fault: ExecutedFault) => {
    await pause(Math.max(0, startedAt + fault.atMs - Date.now()));
    if (cancelled) {
      fault.note = 'cancelled';
      return;
    }
    let undo: (() => Promise<void>) | string;
    try {
      undo = await apply(fault, system, () => !cancelled);
    } catch (error) {
      fault.note = `could not apply: ${describe(error)}`;
      log(`fault ${fault.id} ${fault.kind} ${fault.target}: ${fault.note}`);
      return;
    }
    if (typeof undo === 'string') {
      fault.note = `skipped: ${undo}`;
      log(`fault ${fault.id} ${fault.kind} ${fault.target}: ${fault.note}`);
      return;
    }
    fault.startedMs = since();
    log(`fault ${fault.id} ${fault.kind} ${fault.target}${fault.latencyMs ? ` +${fault.latencyMs} ms` : ''} for ${fault.durationMs} ms`);
    await pause(Math.max(0, startedAt + fault.atMs + fault.durationMs - Date.now()));
    try {
      await undo();
    } catch (error) {
      fault.note = `undoing it failed: ${describe(error)}`;
      log(`fault ${fault.id} ${fault.kind} ${fault.target}: ${fault.note}`);
    }
    fault.endedMs = since();
  };
  return {
    executed,
    done: Promise.all(executed.map(runOne)).then(() => undefined),
    cancel() {
      cancelled = true;
    },
  };
}

/**
 * Undoes every fault: links healed and fast again, paused nodes continued, dead servers and nodes
 * started (a start that fails is tried again until `deadline`, epoch ms). Throws when something
 * could not be brought back by then.
 */
export async function healAll(system: System, deadline: number, log: (line: string) => void): Promise<void> {
  for (const link of [...system.nats.routeLinks, ...system.nodes.flatMap((node) => [node.httpLink, ...node.natsLinks.values()])]) {
    link.heal();
    link.delay(0);
  }
  for (const node of system.nodes) node.resume();
  for (const server of system.nats.servers) {
    if (!server.running) await server.start();
  }
  await Promise.all(
    system.nodes.map(async (node) => {
      while (node.state !== 'running') {
        if (node.state === 'down') {
          try {
            log(`heal: starting ${node.id}`);
            await node.start();
          } catch (error) {
            if (Date.now() > deadline) throw new Error(`${node.id} could not be started again: ${describe(error)}`, { cause: error });
          }
        } else {
          if (Date.now() > deadline) throw new Error(`${node.id} stayed ${node.state}`);
          await pause(200);
        }
      }
    }),
  );
}
