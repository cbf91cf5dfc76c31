import { afterEach, describe, expect, it } from 'vitest';
import { NodePresence, presenceKey } from '../../src/cluster/node-presence.js';
import { testLeaseBucket, type TestLeaseBucket } from '../helpers/lease-bucket.js';

/**
 * A node's presence write whose answer was lost (docs/nemesis.md finding 9): on a loaded machine,
 * with NATS slow or electing, an update of `presence.<nodeId>` timed out on the client and was
 * stored all the same, so the node's next compare-and-set met a revision it did not know. The node
 * took itself for superseded ("taken over by another process", naming none) and served nothing
 * from then on: in one seed-5 run, all three nodes did. The entry still names the node's own
 * process, so nobody took the id over. Here the lost answer is a write of the node's own record,
 * made on the real KV bucket behind the node's back.
 */

let bucket: TestLeaseBucket | null = null;

afterEach(async () => {
  await bucket?.dispose();
  bucket = null;
});

describe('node presence after a write whose answer was lost', () => {
  it('keeps the node id when the entry still names this process, and gives it up only to another process', async () => {
    bucket = await testLeaseBucket('HL_TEST_presence');
    const { kv } = bucket;
    // The real bucket, whose reads fail while `unreachable` (NATS out of the node's reach).
    let unreachable = false;
    const seenByNode = new Proxy(kv, {
      get: (target, name, receiver) => (name === 'get' && unreachable ? () => Promise.reject(new Error('TIMEOUT')) : Reflect.get(target, name, receiver)),
    });
    const presence = new NodePresence({ kv: seenByNode, nodeId: 'n1', leaseMs: 2_000 });
    await presence.claim();
    expect(await presence.refresh()).toBe('kept');

    // Stored, its answer never read: the entry as this process wrote it, at a revision it does not know.
    const own = (await kv.get(presenceKey('n1')))!;
    await kv.update(presenceKey('n1'), own.value, own.revision);
    expect(await presence.refresh()).not.toBe('superseded');
    expect(await presence.refresh()).toBe('kept');

    // Another lost answer, and NATS out of reach when the node reads the entry back: the read's
    // failure says nothing of who holds the id (taken for "no entry", it stopped node-1 for good).
    const again = (await kv.get(presenceKey('n1')))!;
    await kv.update(presenceKey('n1'), again.value, again.revision);
    unreachable = true;
    expect(await presence.refresh()).toBe('unknown');
    unreachable = false;
    expect(await presence.refresh()).not.toBe('superseded');
    expect(await presence.refresh()).toBe('kept');

    // Another process's claim is a takeover, as before.
    const other = JSON.stringify({ ...JSON.parse(new TextDecoder().decode(own.value)), incarnation: 'another', pid: own.value.length + 1 });
    const current = (await kv.get(presenceKey('n1')))!;
    await kv.update(presenceKey('n1'), new TextEncoder().encode(other), current.revision);
    expect(await presence.refresh()).toBe('superseded');
  });

  it('claims the node id through the failures NATS answers while its server is cut off from its peers', async () => {
    bucket = await testLeaseBucket('HL_TEST_presence');
    const { kv } = bucket;
    // The entry's first reads fail as they did for a node started again while its NATS server was
    // cut off from its peers: nobody answered ("jetstream is not enabled"), and the start exited.
    let failures = 2;
    const cutOff = new Proxy(kv, {
      get: (target, name, receiver) =>
        name === 'get' && failures > 0
          ? () => {
              failures--;
              return Promise.reject(Object.assign(new Error('jetstream is not enabled'), { name: 'JetStreamNotEnabled' }));
            }
          : Reflect.get(target, name, receiver),
    });
    const presence = new NodePresence({ kv: cutOff, nodeId: 'n2', leaseMs: 2_000 });
    await presence.claim();
    expect(failures).toBe(0);
    expect(await presence.refresh()).toBe('kept');
  });
});
