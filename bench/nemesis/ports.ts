import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';

/**
 * Ports on 127.0.0.1 held open until released. The link proxies listen on ports of the kernel's
 * choosing; a port only looked up free (`freePort`) and bound later by a nats-server or a node
 * could meanwhile go to a proxy (seen: "can't listen to the monitor port: address already in use").
 * Held, it cannot: reserve the ports, make the proxies, release, then start the processes.
 */
export interface PortReservation {
  readonly ports: readonly number[];
  release(): Promise<void>;
}

export async function reservePorts(count: number): Promise<PortReservation> {
  const servers: Server[] = [];
  for (let index = 0; index < count; index++) {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push(server);
  }
  return {
    ports: servers.map((server) => (server.address() as AddressInfo).port),
    release: async () => {
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    },
  };
}
