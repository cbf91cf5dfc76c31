import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, startChildNode } from '../helpers/child-node.js';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-cluster.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { SETUP_DEADLINE_MS } from '../../src/transport/nats-streams.js';

/**
 * A cluster node started while its NATS cluster loses its leaders (issue 36, docs/nemesis.md
 * finding 4): node-2 of the nemesis, started again while a NATS server was cut off, logged
 * `cluster: directory, leases and changelog ready` and then exited 1 on "JetStream system
 * temporarily unavailable": the steps after that line (the directory's watch, joining the
 * membership, the unpartitioned events' consumer) did not retry what an election answers, as the
 * steps before it do. Here the node is stopped right at that line, two of the three NATS servers
 * are killed (no quorum: no meta or stream leader), the node goes on, and the servers come back a
 * few seconds later: the start must wait for the leaders and serve.
 */

beforeAll(() => ensureBuilt(), 120_000);

let nats: TestNatsCluster | null = null;
let cluster: TestCluster | null = null;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  await cluster?.dispose();
  await nats?.dispose();
  for (const dir of dirs.splice(0)) dir.remove();
  cluster = nats = null;
});

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('a cluster node started during a NATS election', () => {
  it('retries the steps after "directory, leases and changelog ready" until NATS has its leaders again, and serves', async () => {
    nats = await startNatsCluster('token');
    const natsCluster = nats;
    const survivor = natsCluster.member('n1');
    // Only the server that stays up: the node's connections never move.
    cluster = await startTestCluster({
      partitions: 4,
      label: 'cluster-start-election',
      nats: { settings: { ...natsCluster.hooklineSettings(), HOOKLINE_NATS_URL: survivor.url }, connect: () => natsCluster.connect() },
      settings: { HOOKLINE_NATS_REPLICAS: '3' },
    });
    const dir = makeTempDir('hookline-start-election-');
    dirs.push(dir);
    let outage: Promise<void> | null = null;
    const started = startChildNode(dir.path, cluster.settingsFor('n1'), {
      args: ['--cluster'],
      startTimeoutMs: 2 * SETUP_DEADLINE_MS,
      onLine: (line, child) => {
        if (outage || !line.includes('cluster: directory, leases and changelog ready')) return;
        // Held still while the quorum goes, so its next steps meet a NATS without leaders.
        child.kill('SIGSTOP');
        outage = (async () => {
          await Promise.all([natsCluster.member('n2').kill9(), natsCluster.member('n3').kill9()]);
          child.kill('SIGCONT');
          await pause(4_000);
          await Promise.all([natsCluster.member('n2').start(), natsCluster.member('n3').start()]);
        })();
      },
    });
    const node = await started;
    try {
      expect(outage).not.toBeNull();
      await outage;
      // It went on through the outage: it serves, and takes its partitions once NATS is whole.
      const healthz = await fetch(`${node.url}/healthz`);
      expect(healthz.status).toBe(200);
      await node.waitForLog(/^partition acquired$/, 60_000);
    } finally {
      node.process.kill('SIGKILL');
      await node.exited;
    }
  }, 180_000);
});
