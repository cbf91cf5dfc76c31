import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP link the nemesis controls: a listener on 127.0.0.1 forwarding every connection to `target`.
 *
 * - `cut()` partitions the link the way a firewall dropping packets does: the proxy stops reading
 *   both sides, so the kernel's buffers fill and each sender's writes stall, as TCP behaves when its
 *   segments are lost and retransmitted; nothing is closed. A connection opened meanwhile is
 *   accepted and stalled the same way. `heal()` reads again: what was sent arrives, late, in order,
 *   and an end of either side during the cut is seen then.
 * - `delay(ms)` makes the link slow: every chunk, each way, is forwarded `ms` after it arrived (in
 *   order; a smaller delay never overtakes bytes held by a larger one). `delay(0)` ends it.
 *
 * Unlike test/helpers/tcp-proxy.ts (which holds bytes in memory while frozen), the cut here is back
 * pressure, so a long partition costs the proxy no memory.
 */
export interface LinkProxy {
  readonly name: string;
  readonly port: number;
  /** Whether the link is cut now. */
  readonly isCut: boolean;
  cut(): void;
  heal(): void;
  /** One-way delay added to every chunk, in milliseconds; 0 for none. */
  delay(ms: number): void;
  /** Closes the listener and every connection through it. */
  close(): Promise<void>;
}

/** One direction of one connection: chunks waiting for their release time, in arrival order. */
interface Lane {
  from: Socket;
  to: Socket;
  queue: Array<{ chunk: Buffer; releaseAt: number }>;
  timer: NodeJS.Timeout | null;
}

export async function startLinkProxy(name: string, targetPort: number, targetHost = '127.0.0.1'): Promise<LinkProxy> {
  const lanes = new Set<Lane>();
  const sockets = new Set<Socket>();
  let cutNow = false;
  let delayMs = 0;

  const release = (lane: Lane) => {
    lane.timer = null;
    if (cutNow) return;
    const now = Date.now();
    while (lane.queue.length > 0 && lane.queue[0]!.releaseAt <= now) {
      const { chunk } = lane.queue.shift()!;
      if (!lane.to.destroyed) lane.to.write(chunk);
    }
    if (lane.queue.length > 0) lane.timer = setTimeout(release, lane.queue[0]!.releaseAt - now, lane);
  };

  const lane = (from: Socket, to: Socket): Lane => {
    const made: Lane = { from, to, queue: [], timer: null };
    lanes.add(made);
    from.on('data', (chunk: Buffer) => {
      if (delayMs === 0 && made.queue.length === 0) {
        if (!to.destroyed) to.write(chunk);
        return;
      }
      const last = made.queue[made.queue.length - 1];
      made.queue.push({ chunk, releaseAt: Math.max(Date.now() + delayMs, last?.releaseAt ?? 0) });
      if (made.timer === null && !cutNow) made.timer = setTimeout(release, Math.max(0, made.queue[0]!.releaseAt - Date.now()), made);
    });
    if (cutNow) from.pause();
    return made;
  };

  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    sockets.add(client).add(upstream);
    const lanesOfConnection = [lane(client, upstream), lane(upstream, client)];
    const end = () => {
      for (const each of lanesOfConnection) {
        if (each.timer) clearTimeout(each.timer);
        lanes.delete(each);
      }
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end).on('end', end);
    upstream.on('error', end).on('close', end).on('end', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    name,
    port,
    get isCut() {
      return cutNow;
    },
    cut() {
      cutNow = true;
      for (const each of lanes) {
        each.from.pause();
        if (each.timer) clearTimeout(each.timer);
        each.timer = null;
      }
    },
    heal() {
      if (!cutNow) return;
      cutNow = false;
      for (const each of lanes) {
        each.from.resume();
        if (each.queue.length > 0) release(each);
      }
    },
    delay(ms) {
      delayMs = ms;
    },
    async close() {
      for (const each of lanes) if (each.timer) clearTimeout(each.timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
