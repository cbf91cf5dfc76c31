import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { uniqueClusterNames } from '../helpers/cluster.js';
import { startOwnNatsServer, type OwnNatsServer } from '../helpers/nats.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A cluster node whose lease worker's NATS connection ends for good (here: nats.js gives up after
 * two failed reconnects while its own nats-server is down) can no longer renew a lease: it must say
 * so in /readyz, as it does when its main connection ends, though that one comes back. The node
 * runs in this process from dist/ (its worker runs the built lease-worker.js), on a nats-server of
 * its own (own port and store), never the shared one.
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

describe('the lease worker\'s NATS connection ending for good', () => {
  it('makes /readyz answer 503 unavailable naming the leases, and it stays so when the node\'s own connection is back', async () => {
    const server: OwnNatsServer = await startOwnNatsServer();
    cleanups.push(() => server.dispose());
    const dir = makeTempDir('hookline-lease-connection-');
    cleanups.push(() => dir.remove());
    const records: Array<Record<string, any>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void records.push(JSON.parse(line) as Record<string, any>) });
    const node = await startHookline(
      defaultSettings({ ...uniqueClusterNames(), dataDir: dir.path, host: '127.0.0.1', port: 0, apiKey: 'lease-test-key', natsUrl: server.url, cluster: true, nodeId: 'node-leases', partitions: 4, leaseMs: 2_000 }),
      { logger, leaseReconnectAttempts: 2 },
    );
    cleanups.push(() => node.close());
    const readyz = async () => {
      const response = await fetch(`${node.url}/readyz`);
      return { status: response.status, body: (await response.json()) as { status: string; reason?: string } };
    };
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
});
