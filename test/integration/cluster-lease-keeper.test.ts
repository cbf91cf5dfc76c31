import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PartitionLeases } from '../../src/cluster/leases.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { testLeaseBucket } from '../helpers/lease-bucket.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The lease keeper of dist/ (its worker runs the built lease-worker.js) on the shared NATS. A node's
 * leases used to be renewed by its main thread: a turn of the event loop longer than a lease (a
 * backlog ingested in one go, a restore, a long GC) lapsed every lease it held, and the node handed
 * its partitions back though it was alive. The worker renews them whatever the main thread does.
 */

type LeaseKeeperModule = typeof import('../../dist/cluster/lease-keeper.js');
let LeaseKeeper: LeaseKeeperModule['LeaseKeeper'];

const LEASE_MS = 1_000; // tick 250 ms; a renewal counts valid 800 ms after it was sent
const PARTITIONS = 4;
const silent = { info: () => {}, warn: () => {}, error: () => {} };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(async () => {
  ensureBuilt();
  ({ LeaseKeeper } = await import('../../dist/cluster/lease-keeper.js'));
});

/** A leases bucket of its own (deleted after the test), a keeper on it, and another node's leases on the same bucket. */
async function keeperAndRival(options: { maxStallMs?: number } = {}) {
  const { bucket, kv, listKeys, dispose } = await testLeaseBucket('HL_TEST_keeper');
  cleanups.push(dispose);
  const warnings: string[] = [];
  const keeper = await LeaseKeeper.start({
    access: { natsUrl: SHARED_NATS_URL },
    bucket,
    replicas: 1,
    nodeId: 'node-a',
    partitions: PARTITIONS,
    leaseMs: LEASE_MS,
    tickMs: LEASE_MS / 4,
    ...options,
    logger: { ...silent, warn: (_fields: object, message?: string) => void warnings.push(message ?? '') },
  });
  cleanups.push(() => keeper.stop());
  const fenced: Array<[number, string]> = [];
  keeper.onFenced((partition, outcome) => fenced.push([partition, outcome]));
  const rival = new PartitionLeases(kv, listKeys, 'node-b', LEASE_MS);
  return { keeper, rival, kv, bucket, fenced, warnings };
}

/**
 * Blocks this thread in a synchronous child process that plays node-b: at `checkAt` (epoch ms) it
 * reads the membership and takes partition 0. Its view is the cluster's while this node is stuck;
 * read from this thread after the block, it would race the heartbeat the node rightly sends again
 * once its loop turns.
 */
function rivalViewWhileBlocked(bucket: string, checkAt: number): { live: string[]; acquired: boolean } {
  const dist = pathToFileURL(resolve('dist')).href;
  const script = `
    const { connect } = await import('@nats-io/transport-node');
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const { ensureKv, kvKeyLister } = await import('${dist}/transport/nats-streams.js');
    const { PartitionLeases } = await import('${dist}/cluster/leases.js');
    const connection = await connect({ servers: ${JSON.stringify(SHARED_NATS_URL)} });
    const manager = await jetstreamManager(connection);
    const kv = await ensureKv(connection, manager, ${JSON.stringify(bucket)}, 1);
    const rival = new PartitionLeases(kv, kvKeyLister(manager, ${JSON.stringify(bucket)}), 'node-b', ${LEASE_MS});
    await new Promise((wake) => setTimeout(wake, ${checkAt} - Date.now()));
    const live = await rival.liveNodes();
    const acquired = await rival.acquire(0);
    await connection.close();
    console.log(JSON.stringify({ live, acquired }));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { live: string[]; acquired: boolean };
}

/** Holds this thread, as a long synchronous turn of a busy node does. */
function blockMainThread(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spinning
  }
}

describe('the lease keeper', () => {
  it('keeps every lease while the main thread is blocked for three lease times; no other node can take one', async () => {
    const { keeper, rival, fenced } = await keeperAndRival();
    await keeper.join();
    for (let partition = 0; partition < PARTITIONS; partition++) expect(await keeper.acquire(partition)).toBe(true);
    expect(await keeper.liveNodes()).toEqual(['node-a']);

    blockMainThread(3 * LEASE_MS);

    for (let partition = 0; partition < PARTITIONS; partition++) {
      expect(keeper.isValid(partition), `partition ${partition}`).toBe(true);
      expect(await rival.acquire(partition), `node-b takes partition ${partition}`).toBe(false);
      expect(await rival.holder(partition)).toBe('node-a');
    }
    expect(fenced).toEqual([]);
  }, 30_000);

  it('lets the leases run out, and the node leave the membership, once the main thread is blocked longer than allowed', async () => {
    const maxStallMs = 2 * LEASE_MS;
    const { keeper, bucket, fenced, warnings } = await keeperAndRival({ maxStallMs });
    await keeper.join();
    expect(await keeper.acquire(0)).toBe(true);

    const seenByRival = rivalViewWhileBlocked(bucket, Date.now() + maxStallMs + 2 * LEASE_MS);

    expect(keeper.isValid(0)).toBe(false);
    expect(seenByRival).toEqual({ live: [], acquired: true });
    await waitFor(() => warnings.some((message) => message.includes('has not turned')), { message: 'the stall is logged' });
    // Turning again, the keeper finds the lease run out locally and reports it; it never counts as valid again.
    await waitFor(() => fenced.length > 0, { message: 'the lapsed lease reported' });
    expect(fenced).toEqual([[0, 'lapsed']]);
    expect(keeper.isValid(0)).toBe(false);
  }, 30_000);

  it('reports a lease another node wrote since its last renewal as lost, and stops counting it valid', async () => {
    const { keeper, kv, fenced } = await keeperAndRival();
    await keeper.join();
    expect(await keeper.acquire(2)).toBe(true);
    expect(keeper.isValid(2)).toBe(true);
    await kv.put('lease.2', new TextEncoder().encode(JSON.stringify({ nodeId: 'node-b', expiresAt: Date.now() + 60_000 })));
    await waitFor(() => fenced.length > 0, { message: 'the lost lease reported' });
    expect(fenced).toEqual([[2, 'lost']]);
    expect(keeper.isValid(2)).toBe(false);
  }, 30_000);

  it('gives a lease back at once on release, and leaves the membership on stop', async () => {
    const { keeper, rival } = await keeperAndRival();
    await keeper.join();
    expect(await keeper.acquire(1)).toBe(true);
    expect(await rival.acquire(1)).toBe(false);
    await keeper.release(1);
    expect(keeper.isValid(1)).toBe(false);
    expect(await rival.acquire(1)).toBe(true);
    expect(await rival.liveNodes()).toEqual(['node-a']);
    await keeper.stop();
    expect(await rival.liveNodes()).toEqual([]);
  }, 30_000);

  it('fails its start with the one line naming HOOKLINE_NATS_URL when nothing listens there', async () => {
    const started = LeaseKeeper.start({ access: { natsUrl: 'nats://127.0.0.1:1' }, bucket: 'HL_TEST_unused', replicas: 1, nodeId: 'node-a', partitions: 1, leaseMs: LEASE_MS, tickMs: LEASE_MS / 4, logger: silent });
    await expect(started).rejects.toMatchObject({ name: 'HooklineError', code: 'HOOKLINE_ERR_NATS_UNAVAILABLE', message: expect.stringContaining('HOOKLINE_NATS_URL=nats://127.0.0.1:1') });
  }, 30_000);
});
