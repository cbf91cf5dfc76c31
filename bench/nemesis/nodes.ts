import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startChildNode, type ChildNode } from '../../test/helpers/child-node.js';
import { startLinkProxy, type LinkProxy } from './link-proxy.js';
import type { NemesisNats } from './nats-cluster.js';
import { reservePorts } from './ports.js';

/**
 * The Hookline nodes under test: `node dist/cli/main.js serve --cluster` (test/helpers/child-node.ts),
 * each with its own data directory and a fixed port, reached over HTTP through a link proxy, and
 * reaching each NATS server through a link proxy of its own (its HOOKLINE_NATS_URL lists the three),
 * so the nemesis can cut a node off from NATS or slow it. A node keeps its port and data directory
 * across restarts, as a crashed service restarted by its supervisor would.
 */

export type NodeState = 'running' | 'paused' | 'down' | 'starting';

export interface NemesisNode {
  readonly id: string;
  /** Its API through its HTTP link. */
  readonly url: string;
  readonly state: NodeState;
  readonly httpLink: LinkProxy;
  /** Its link to each NATS server, by server name. */
  readonly natsLinks: ReadonlyMap<string, LinkProxy>;
  /** The pid of the running process, or null. */
  readonly pid: number | null;
  /** Starts it (again); resolves once it serves HTTP. Rejects, leaving it down, when it does not within the start timeout. */
  start(): Promise<void>;
  /** SIGKILL; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGSTOP: the process, its lease thread included, stops where it is. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Every stdout line of every process this node ran, a marker line before each start, its stderr after. */
  logLines(): string[];
  /** Starts that did not serve: when each began, and why it failed (the start's error, up to its log lines). */
  startFailures(): Array<{ at: number; reason: string }>;
  /** Exits nobody asked for: when, and how. */
  readonly unexpectedExits: ReadonlyArray<{ at: number; code: number | null; signal: string | null; stderr: string }>;
}

export interface NodeOptions {
  dir: string;
  ids: readonly string[];
  nats: NemesisNats;
  /** HOOKLINE_* settings every node gets beside its own id, port, data directory and NATS URL. */
  settings: Record<string, string>;
  /** How long a start may take before it counts as failed. */
  startTimeoutMs: number;
}

export async function makeNodes(options: NodeOptions): Promise<NemesisNode[]> {
  const nodes: NemesisNode[] = [];
  // Held while the proxies are made (ports.ts), released once they all listen.
  const reserved = await reservePorts(options.ids.length);
  for (const [index, id] of options.ids.entries()) {
    const port = reserved.ports[index]!;
    const dataDir = join(options.dir, id);
    mkdirSync(dataDir, { recursive: true });
    const httpLink = await startLinkProxy(`${id} http`, port);
    const natsLinks = new Map<string, LinkProxy>();
    for (const server of options.nats.servers) natsLinks.set(server.name, await startLinkProxy(`${id}>${server.name}`, server.clientPort));
    const natsUrl = [...natsLinks.values()].map((link) => `nats://127.0.0.1:${link.port}`).join(',');
    const lifetimes: Array<{ startedAt: number; child: ChildNode | null; failure: string | null }> = [];
    const unexpectedExits: Array<{ at: number; code: number | null; signal: string | null; stderr: string }> = [];
    let child: ChildNode | null = null;
    let state: NodeState = 'down';
    let killing = false;

    const node: NemesisNode = {
      id,
      url: `http://127.0.0.1:${httpLink.port}`,
      get state() {
        return state;
      },
      httpLink,
      natsLinks,
      get pid() {
        return child?.process.pid ?? null;
      },
      async start() {
        if (state !== 'down') throw new Error(`${id} is ${state}, not down`);
        state = 'starting';
        const lifetime: (typeof lifetimes)[number] = { startedAt: Date.now(), child: null, failure: null };
        lifetimes.push(lifetime);
        try {
          const started = await startChildNode(dataDir, { ...options.settings, HOOKLINE_NODE_ID: id, HOOKLINE_PORT: String(port), HOOKLINE_NATS_URL: natsUrl }, { args: ['--cluster'], startTimeoutMs: options.startTimeoutMs });
          lifetime.child = started;
          child = started;
          state = 'running';
          void started.exited.then(({ code, signal }) => {
            if (child !== started) return;
            child = null;
            state = 'down';
            if (!killing) unexpectedExits.push({ at: Date.now(), code, signal, stderr: started.stderr().slice(-4_000) });
          });
        } catch (error) {
          lifetime.failure = error instanceof Error ? error.message : String(error);
          state = 'down';
          throw error;
        }
      },
      async kill9() {
        const running = child;
        if (!running) return;
        killing = true;
        try {
          running.process.kill('SIGKILL');
          await running.exited;
        } finally {
          killing = false;
        }
      },
      pause() {
        if (child && state === 'running') {
          child.process.kill('SIGSTOP');
          state = 'paused';
        }
      },
      resume() {
        if (child && state === 'paused') {
          child.process.kill('SIGCONT');
          state = 'running';
        }
      },
      logLines() {
        return lifetimes.flatMap((lifetime) => [
          `--- ${id} started at ${new Date(lifetime.startedAt).toISOString()} ---`,
          ...(lifetime.child?.lines ?? []),
          ...(lifetime.child && lifetime.child.stderr() !== '' ? [`--- ${id} stderr:`, lifetime.child.stderr()] : []),
          ...(lifetime.failure ? [`--- start failed: ${lifetime.failure}`] : []),
        ]);
      },
      startFailures() {
        return lifetimes.flatMap((lifetime) => (lifetime.failure ? [{ at: lifetime.startedAt, reason: lifetime.failure.split('\nlast ')[0]!.trim() }] : []));
      },
      unexpectedExits,
    };
    nodes.push(node);
  }
  await reserved.release();
  return nodes;
}
