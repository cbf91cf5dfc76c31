import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { uniqueClusterNames } from '../helpers/cluster.js';
import { startOwnNatsServer, tokenNatsServer, type OwnNatsServer } from '../helpers/nats.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A cluster node's lease worker has a NATS connection of its own. Should it end for good (here:
 * nats.js gives up after two failed reconnects while the nats-server is down), the node can no
 * longer renew a lease and must say so in /readyz, as it does when its main connection ends, even
 * though that one comes back. It must not end for refused credentials, any more than the node's own.
 * The node runs in this process from dist/ (its worker runs the built lease-worker.js), on a
 * nats-server of its own (own port and store), never the shared one.
 */

type AppModule = typeof import('../../dist/app.js');
type SettingsModule = typeof import('../../dist/config/settings.js');
let startHookline: AppModule['startHookline'];
let defaultSettings: SettingsModule['defaultSettings'];

beforeAll(async () => {
  ensureBuilt();
  ({ startHookline } = await import('../../dist/app.js'));
  ({ defaultSettings } = await import('../../dist/config/settings.js'));
});

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const PARTITIONS = 4;

/** A cluster node on `natsUrl` (a data directory of its own), with its log records kept. */
async function startNode(settings: { natsUrl: string; natsToken?: string; nodeId: string }, leaseReconnectAttempts?: number) {
  const dir = makeTempDir('hookline-lease-connection-');
  cleanups.push(() => dir.remove());
  const records: Array<Record<string, any>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void records.push(JSON.parse(line) as Record<string, any>) });
  const node = await startHookline(
    defaultSettings({ ...uniqueClusterNames(), ...settings, dataDir: dir.path, host: '127.0.0.1', port: 0, apiKey: 'lease-test-key', cluster: true, partitions: PARTITIONS, leaseMs: 2_000 }),
    { logger, ...(leaseReconnectAttempts !== undefined ? { leaseReconnectAttempts } : {}) },
  );
  cleanups.push(() => node.close());
  return {
    node,
    records,
    async readyz() {
      const response = await fetch(`${node.url}/readyz`);
      return { status: response.status, body: (await response.json()) as { status: string; reason?: string } };
    },
    async partitions(): Promise<number[]> {
      const response = await fetch(`${node.url}/healthz`);
      return ((await response.json()) as { cluster: { partitions: number[] } }).cluster.partitions;
    },
  };
}

describe('the lease worker\'s NATS connection', () => {
  it('ending for good makes /readyz answer 503 unavailable naming the leases, and it stays so when the node\'s own connection is back', async () => {
    const server: OwnNatsServer = await startOwnNatsServer();
    cleanups.push(() => server.dispose());
    const { node, records, readyz } = await startNode({ natsUrl: server.url, nodeId: 'node-leases' }, 2);
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready' } });

    await server.kill9();
    const unavailable = await waitFor(async () => {
      const answer = await readyz();
      return answer.status === 503 ? answer : null;
    }, { timeoutMs: 15_000, message: '/readyz to answer 503 once the lease worker gave up' });
    expect(unavailable.body.status).toBe('unavailable');
    expect(unavailable.body.reason).toMatch(/^NATS connection closed for good, this node's partition leases are no longer renewed .*: HOOKLINE_NATS_URL=nats:\/\/127\.0\.0\.1:\d+: nothing listens there.*; then restart Hookline$/);
    const logged = records.find((record) => record.level === 50 && record.thread === 'leases' && record.msg === unavailable.body.reason);
    expect(logged, JSON.stringify(records.filter((record) => record.level >= 40))).toBeDefined();

    // The node's own connection reconnects forever: it is back, the lease worker's is not.
    await server.start();
    await waitFor(() => records.some((record) => record.msg === 'NATS connection restored' && record.thread === undefined), { timeoutMs: 15_000, message: "the node's own NATS connection to be restored" });
    expect(await readyz()).toEqual(unavailable);
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
  }, 60_000);

  it('does not end when the server refuses its token for a while: it reconnects like the node\'s own, and the node takes its partitions again', async () => {
    const dir = makeTempDir('hookline-lease-token-');
    cleanups.push(() => dir.remove());
    const server = await tokenNatsServer(dir.path);
    cleanups.push(() => server.process.signal('SIGKILL'));
    await server.restartWith('lease-token');
    const { records, readyz, partitions } = await startNode({ natsUrl: server.url, natsToken: 'lease-token', nodeId: 'node-token' });
    await waitFor(async () => (await partitions()).length === PARTITIONS, { timeoutMs: 20_000, message: 'the node to take every partition' });

    await server.restartWith('another-token');
    // Two refusals in a row end a nats.js connection unless it is told to ride them out.
    await waitFor(async () => (await server.refusals('hookline-node-token-leases')) >= 2, { timeoutMs: 15_000, message: "the server to refuse the lease worker's token twice" });
    await server.restartWith('lease-token');

    await waitFor(() => records.some((record) => record.msg === 'NATS connection restored' && record.thread === 'leases'), { timeoutMs: 15_000, message: "the lease worker's NATS connection to be restored" });
    expect(records.filter((record) => record.level >= 50).map((record) => record.msg)).toEqual([]);
    await waitFor(async () => (await partitions()).length === PARTITIONS, { timeoutMs: 20_000, message: 'the node to hold every partition again' });
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready' } });
  }, 90_000);
});
