import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { desiredPartitions } from '../../src/cluster/rendezvous.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestCluster, uniqueClusterNames, type TestCluster } from '../helpers/cluster.js';
import { freePort, natsServerProcess, type NatsServerProcess } from '../helpers/nats.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A partition whose owner by rendezvous hashing cannot take it over (issue 36, docs/nemesis.md
 * finding 5): in the nemesis, a node whose partition consumer could not be set up took the
 * partition again at every tick after each failure, renewing its lease all along, so the partition
 * was served by nobody and no other node could take it. Here node `a` may not touch the JetStream
 * consumer of one partition it owns by rendezvous hashing (the NATS user it connects as is denied
 * that consumer's API subjects), while node `b` may: the partition must be served (by `b`, standing
 * in), and once `a` can serve it (restarted as a user with every permission), go back to `a`.
 */

const PARTITIONS = 4;
const LEASE_MS = 2_000;

beforeAll(() => ensureBuilt(), 120_000);

let server: NatsServerProcess | null = null;
let cluster: TestCluster | null = null;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  await cluster?.dispose();
  await server?.signal('SIGKILL');
  for (const dir of dirs.splice(0)) dir.remove();
  cluster = server = null;
});

describe('a partition its owner cannot take over', () => {
  it('is served by another node meanwhile (its lease is not kept by the node that fails), and goes back to its owner once it can', async () => {
    const names = uniqueClusterNames();
    const [blocked] = [...desiredPartitions('a', ['a', 'b'], PARTITIONS)];
    expect(blocked).toBeDefined();
    const durable = `${names.natsDurable}-p${blocked}`;
    const password = randomBytes(9).toString('hex');
    const dir = makeTempDir('hookline-takeover-failing-');
    dirs.push(dir);
    const port = await freePort();
    // The consumer's API subjects, as nats.js and a 2.9 or later server name them.
    const denied = ['INFO', 'CREATE', 'DURABLE.CREATE', 'DELETE', 'MSG.NEXT'].flatMap((call) => [`"$JS.API.CONSUMER.${call}.${names.natsStream}.${durable}"`, `"$JS.API.CONSUMER.${call}.${names.natsStream}.${durable}.>"`]);
    const config = join(dir.path, 'nats.conf');
    writeFileSync(config, [
      `listen: 127.0.0.1:${port}`,
      `jetstream { store_dir: "${join(dir.path, 'store')}", max_memory_store: 64MB, max_file_store: 1GB }`,
      `authorization { users: [ { user: full, password: "${password}" }, { user: limited, password: "${password}", permissions: { publish: { allow: [">"], deny: [${denied.join(', ')}] } } } ] }`,
    ].join('\n'));
    server = natsServerProcess(['-c', config], 'nats-server (permissions)', port);
    await server.start();
    const url = `nats://127.0.0.1:${port}`;
    cluster = await startTestCluster({
      partitions: PARTITIONS,
      leaseMs: LEASE_MS,
      label: 'cluster-takeover-failing',
      nats: { settings: { HOOKLINE_NATS_URL: url, HOOKLINE_NATS_USER: 'full', HOOKLINE_NATS_PASSWORD: password }, connect: () => connect({ servers: url, user: 'full', pass: password }) },
      settings: { HOOKLINE_NATS_STREAM: names.natsStream, HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix, HOOKLINE_NATS_DURABLE: names.natsDurable, HOOKLINE_CLUSTER_SUBJECT_PREFIX: names.clusterSubjectPrefix },
    });
    const c = cluster;
    const a = await c.start('a', { HOOKLINE_NATS_USER: 'limited' });
    await c.start('b');

    // Served, and by b: a cannot set up its consumer.
    const owners = await waitFor(
      async () => {
        const seen = await c.ownership();
        return seen.size === PARTITIONS ? seen : null;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: `every partition served, partition ${blocked} too` },
    );
    expect(owners.get(blocked!)).toBe('b');
    expect(a.logs(/^could not take over partition; giving it back$/).some((record) => record.partition === blocked)).toBe(true);

    // a, able to serve it now, takes back what rendezvous hashing gives it.
    await a.kill9();
    await c.start('a');
    await c.waitForOwnership(['a', 'b'], 120_000);
  }, 300_000);
});
