import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { LeaseRenewal } from '../../src/cluster/lease-renewal.js';
import { PartitionLeases } from '../../src/cluster/leases.js';
import { ensureKv, kvKeyLister } from '../../src/transport/nats-streams.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from '../helpers/nats.js';
import { testLeaseBucket, type TestLeaseBucket } from '../helpers/lease-bucket.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A node's partition leases stay renewed while its heartbeat is slow. Under load (bench:cluster at
 * load 6-13) a heartbeat answered 1.3 s late, renewals waited for it, leases lapsed locally and a
 * single node fenced all its partitions though NATS would have renewed every one.
 */

const LEASE_MS = 2_000; // tick 500 ms; a lease counts valid 1,600 ms after its renewal was sent
const PARTITIONS = 4;
const HEARTBEAT_STALL_MS = 3_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A leases bucket of its own on the shared NATS, deleted after the test. */
async function leaseBucket(): Promise<TestLeaseBucket> {
  const bucket = await testLeaseBucket();
  cleanups.push(() => bucket.dispose());
  return bucket;
}

describe('partition leases', () => {
  it('are renewed on time while a heartbeat stalls: no partition is fenced', async () => {
    const { kv, listKeys } = await leaseBucket();
    const leases = new PartitionLeases(kv, listKeys, 'node-a', LEASE_MS);
    for (let partition = 0; partition < PARTITIONS; partition++) expect(await leases.acquire(partition)).toBe(true);
    // The heartbeat's KV put answers late; the renewals are real.
    let stalled = 0;
    const heartbeat = leases.heartbeat.bind(leases);
    leases.heartbeat = async () => {
      stalled++;
      await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_STALL_MS));
      await heartbeat();
    };
    const warnings: string[] = [];
    const fenced: number[] = [];
    let renewals = 0;
    const renewal = new LeaseRenewal({
      leases,
      tickMs: LEASE_MS / 4,
      lastTurnAt: () => Date.now(),
      maxStallMs: 30_000,
      onRenewed: () => renewals++,
      onFenced: (partition) => fenced.push(partition),
      logger: { warn: (_: object, message?: string) => void warnings.push(message ?? '') },
    });
    renewal.start();
    cleanups.push(() => renewal.stop());

    // Two stalls back to back, each longer than a lease stays valid after its last renewal.
    await new Promise((resolve) => setTimeout(resolve, 2 * HEARTBEAT_STALL_MS));

    expect(stalled).toBeGreaterThanOrEqual(2);
    expect(renewals).toBeGreaterThanOrEqual(8 * PARTITIONS);
    expect(warnings).toEqual([]);
    expect(fenced).toEqual([]);
    for (let partition = 0; partition < PARTITIONS; partition++) expect(leases.isValid(partition), `partition ${partition}`).toBe(true);
  }, 30_000);

  it('are no longer renewed, nor the heartbeat written, once the main thread has not turned for longer than allowed', async () => {
    const { kv, listKeys } = await leaseBucket();
    const leases = new PartitionLeases(kv, listKeys, 'node-a', LEASE_MS);
    expect(await leases.acquire(0)).toBe(true);
    // The "main thread": turning, until it stops at `stoppedAt`.
    let stoppedAt: number | null = null;
    const warnings: string[] = [];
    const renewal = new LeaseRenewal({
      leases,
      tickMs: LEASE_MS / 4,
      lastTurnAt: () => stoppedAt ?? Date.now(),
      maxStallMs: LEASE_MS,
      onRenewed: () => {},
      onFenced: () => {},
      logger: { warn: (_: object, message?: string) => void warnings.push(message ?? '') },
    });
    renewal.start();
    cleanups.push(() => renewal.stop());
    await waitFor(async () => (await leases.liveNodes()).includes('node-a'), { message: 'node-a heartbeats' });
    // It stops turning: within the allowance the lease is still kept, then it runs out.
    stoppedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 2));
    expect(leases.isValid(0)).toBe(true);
    await waitFor(() => !leases.isValid(0), { timeoutMs: 3 * LEASE_MS, message: 'the lease runs out' });
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(LEASE_MS);
    expect(warnings.filter((message) => message.includes('has not turned'))).toHaveLength(1);
    await waitFor(async () => !(await leases.liveNodes()).includes('node-a'), { timeoutMs: 3 * LEASE_MS, message: 'node-a drops out of the membership' });
    // Turning again: renewals resume, but a lease that ran out locally stays out (the node must take it again).
    stoppedAt = null;
    await waitFor(async () => (await leases.liveNodes()).includes('node-a'), { message: 'node-a heartbeats again' });
    expect(leases.isValid(0)).toBe(false);
  }, 30_000);
});

describe('a lease renewal', () => {
  it('is lapsed when the lease ran out locally before it, and lost when another node has written the lease since', async () => {
    const { kv, listKeys } = await leaseBucket();
    let now = Date.now();
    const leases = new PartitionLeases(kv, listKeys, 'node-a', LEASE_MS, () => now);
    expect(await leases.acquire(0)).toBe(true);
    expect(await leases.renew(0)).toBe('renewed');
    now += LEASE_MS; // the node's loop held up past the lease's local validity
    expect(await leases.renew(0)).toBe('lapsed');
    expect(leases.heldPartitions()).toEqual([0]);

    expect(await leases.acquire(1)).toBe(true);
    const other = new PartitionLeases(kv, listKeys, 'node-b', LEASE_MS, () => now + 2 * LEASE_MS);
    expect(await other.acquire(1)).toBe(true);
    expect(await leases.renew(1)).toBe('lost');
  });
});

describe('cluster membership', () => {
  it('lists the nodes with a fresh heartbeat, and reading it asks JetStream for no consumer', async () => {
    const connection = await connectNats(SHARED_NATS_URL);
    const observer = await connectNats(SHARED_NATS_URL);
    const bucket = `HL_TEST_leases_${randomBytes(5).toString('hex')}`;
    cleanups.push(async () => {
      await deleteStreams(connection, [`KV_${bucket}`]);
      await Promise.all([connection.close(), observer.close()]);
    });
    const manager = await jetstreamManager(connection);
    const kv = await ensureKv(connection, manager, bucket, 1);
    const listKeys = kvKeyLister(manager, bucket);
    const leasesOf = (nodeId: string, now?: () => number) => new PartitionLeases(kv, listKeys, nodeId, LEASE_MS, now);
    await leasesOf('node-b').heartbeat();
    await leasesOf('node-a').heartbeat();
    await leasesOf('node-stale', () => Date.now() - 2 * LEASE_MS).heartbeat();
    const gone = leasesOf('node-gone');
    await gone.heartbeat();
    await gone.leave();

    // Every tick of every node reads the membership: a consumer per read (kv.keys()) is a proposal
    // to the meta group of a replicated cluster, and one was left running whenever a read timed out.
    // Only this bucket's requests count: other test files share this NATS.
    const consumerRequests: string[] = [];
    const watching = observer.subscribe('$JS.API.CONSUMER.>', {
      callback: (_error, message) => {
        if (message.subject.includes(`.KV_${bucket}`)) consumerRequests.push(message.subject);
      },
    });
    await observer.flush();
    const reader = leasesOf('node-a');
    for (let round = 0; round < 5; round++) expect(await reader.liveNodes()).toEqual(['node-a', 'node-b']);
    await connection.flush();
    await observer.flush();
    watching.unsubscribe();
    expect(consumerRequests).toEqual([]);
  });

  it('says whether every live node reads changelog snapshots: a heartbeat of an earlier version has no such field', async () => {
    const { kv, listKeys } = await leaseBucket();
    const node = new PartitionLeases(kv, listKeys, 'node-a', LEASE_MS);
    await node.heartbeat();
    expect(await node.everyLiveNodeReadsSnapshots()).toBe(true);
    const earlier = (heartbeatAt: number) => new TextEncoder().encode(JSON.stringify({ nodeId: 'node-old', heartbeatAt }));
    await kv.put('node.node-old', earlier(Date.now()));
    expect(await node.everyLiveNodeReadsSnapshots()).toBe(false);
    // Once its heartbeat is older than the lease time, it is gone, and holds nothing back.
    await kv.put('node.node-old', earlier(Date.now() - 2 * LEASE_MS));
    expect(await node.everyLiveNodeReadsSnapshots()).toBe(true);
  });
});
