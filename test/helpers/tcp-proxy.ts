import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 to `target`, for cutting one client off from a server without closing
 * its connection: `freeze()` stops moving bytes both ways (the client's requests just go
 * unanswered, as in a network partition), `thaw()` lets the held bytes through again.
 */
export interface FreezableProxy {
  readonly port: number;
  readonly url: string;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startFreezableProxy(targetHost: string, targetPort: number, scheme = 'nats'): Promise<FreezableProxy> {
  const sockets = new Set<Socket>();
  /** Bytes held back while frozen, with the socket they are for, in arrival order. */
  let held: Array<[Socket, Buffer]> = [];
  let frozen = false;
  const forward = (to: Socket) => (chunk: Buffer) => {
    if (frozen) held.push([to, chunk]);
    else if (!to.destroyed) to.write(chunk);
  };
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    sockets.add(client).add(upstream);
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    const end = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `${scheme}://127.0.0.1:${port}`,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      const pending = held;
      held = [];
      for (const [to, chunk] of pending) if (!to.destroyed) to.write(chunk);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
