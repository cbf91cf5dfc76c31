import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsServerProcess, type NatsServerProcess } from '../../test/helpers/nats.js';
import { startLinkProxy, type LinkProxy } from './link-proxy.js';
import { reservePorts } from './ports.js';

/**
 * The nemesis's NATS: three `nats-server` processes on loopback (JetStream, a store each under
 * `dir`), routed to each other only through link proxies, one per direction of each pair, so a pair
 * can be cut or slowed. Each server advertises an address nobody listens on and no client URLs
 * (`no_advertise`): a server that hears of a peer through gossip cannot reach it around the proxy,
 * nor can a client. `routesBypassed()` checks from each server's /routez that this held.
 */
export interface NatsServer {
  readonly name: string;
  readonly clientPort: number;
  readonly running: boolean;
  /** SIGKILL: the store is left as a crash leaves it. */
  kill9(): Promise<void>;
  /** Starts it again on its port and store; resolves once it is ready. */
  start(): Promise<void>;
}

export interface NemesisNats {
  readonly servers: readonly NatsServer[];
  server(name: string): NatsServer;
  /** The proxy that carries `from`'s route connection to `to`. */
  routeLink(from: string, to: string): LinkProxy;
  /** Every route link. */
  readonly routeLinks: readonly LinkProxy[];
  /** The servers' client URLs, comma-separated, not through any proxy (for the producers). */
  readonly directUrls: string;
  /** Route connections made around the proxies (to a server's own route port), per /routez; empty when the partitions were real. */
  routesBypassed(): Promise<string[]>;
  stop(): Promise<void>;
}

/** An address the servers advertise for their routes: nothing listens on port 1. */
const UNREACHABLE_ROUTE = '127.0.0.1:1';

export async function startNemesisNats(dir: string, names: readonly string[]): Promise<NemesisNats> {
  mkdirSync(dir, { recursive: true });
  const reserved = await reservePorts(names.length * 3);
  const ports = new Map<string, { client: number; route: number; monitor: number }>();
  names.forEach((name, index) => {
    const [client, route, monitor] = reserved.ports.slice(index * 3, index * 3 + 3) as [number, number, number];
    ports.set(name, { client, route, monitor });
  });
  const links = new Map<string, LinkProxy>();
  for (const from of names) {
    for (const to of names) if (from !== to) links.set(`${from}>${to}`, await startLinkProxy(`route ${from}>${to}`, ports.get(to)!.route));
  }
  await reserved.release();
  const servers = names.map((name): NatsServer => {
    const port = ports.get(name)!;
    const routes = names.filter((peer) => peer !== name).map((peer) => `nats-route://127.0.0.1:${links.get(`${name}>${peer}`)!.port}`);
    const configFile = join(dir, `${name}.conf`);
    writeFileSync(
      configFile,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${port.client}`,
        `http: 127.0.0.1:${port.monitor}`,
        `jetstream { store_dir: "${join(dir, `store-${name}`)}", max_memory_store: 64MB, max_file_store: 2GB }`,
        `cluster { name: nemesis, listen: 127.0.0.1:${port.route}, advertise: "${UNREACHABLE_ROUTE}", no_advertise: true, routes: [${routes.join(', ')}] }`,
      ].join('\n'),
    );
    const serverProcess: NatsServerProcess = natsServerProcess(['-c', configFile], `nats-server ${name}`, port.client);
    return {
      name,
      clientPort: port.client,
      get running() {
        return serverProcess.running;
      },
      kill9: () => serverProcess.signal('SIGKILL'),
      start: () => serverProcess.start(),
    };
  });
  const nats: NemesisNats = {
    servers,
    server(name) {
      const found = servers.find((server) => server.name === name);
      if (!found) throw new Error(`no NATS server ${name}`);
      return found;
    },
    routeLink(from, to) {
      const link = links.get(`${from}>${to}`);
      if (!link) throw new Error(`no route link ${from}>${to}`);
      return link;
    },
    routeLinks: [...links.values()],
    directUrls: names.map((name) => `nats://127.0.0.1:${ports.get(name)!.client}`).join(','),
    async routesBypassed() {
      const routePorts = new Set([...ports.values()].map((port) => port.route));
      const bypassed: string[] = [];
      for (const server of servers) {
        if (!server.running) continue;
        const answer = await fetch(`http://127.0.0.1:${ports.get(server.name)!.monitor}/routez`, { signal: AbortSignal.timeout(5_000) });
        const { routes } = (await answer.json()) as { routes?: Array<{ ip: string; port: number; remote_id: string }> };
        for (const route of routes ?? []) if (routePorts.has(route.port)) bypassed.push(`${server.name} -> ${route.ip}:${route.port} (${route.remote_id})`);
      }
      return bypassed;
    },
    async stop() {
      await Promise.all(servers.map((server) => server.kill9()));
      await Promise.all([...links.values()].map((link) => link.close()));
    },
  };
  try {
    await Promise.all(servers.map((server) => server.start()));
  } catch (error) {
    await nats.stop();
    throw error;
  }
  return nats;
}
