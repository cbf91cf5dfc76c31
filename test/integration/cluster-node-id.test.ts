import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ensureBuilt, startChildNode, type ChildNode } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { expectOneLineFailure, serveUntilExit } from '../helpers/failed-start.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * One process per HOOKLINE_NODE_ID (issue 36). A fourth node started with a running node's id used
 * to join as that node: the two took each other's leases in turn (about 260 "partition lease taken
 * by another node" warnings in 25 s). Now the second is refused at its start, naming the id and the
 * live node; a node restarted after a kill -9, whose previous incarnation's entry is still fresh,
 * is not taken for a live one.
 */

const PARTITIONS = 8;
const LEASE_MS = 2_000;

beforeAll(() => ensureBuilt(), 120_000);

describe('HOOKLINE_NODE_ID in a cluster', () => {
  it('a second node with a live node\'s id is refused at its start: exit 1, one line naming HOOKLINE_NODE_ID and the live node\'s host and pid', async () => {
    const cluster = await startTestClusterForTest({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'node-id-live' });
    const live = await cluster.start('n1');
    await cluster.waitForOwnership(['n1']);
    const dir = makeTempDir('hookline-node-id-twin-');
    onTestFinished(() => dir.remove());

    const twin = await serveUntilExit({ ...cluster.settingsFor('n1'), HOOKLINE_CLUSTER: '1', HOOKLINE_DATA_DIR: dir.path }, { timeoutMs: 30_000 });

    expectOneLineFailure(twin, new RegExp(`HOOKLINE_NODE_ID=n1 is in use by a live node \\(host \\S+, pid ${live.child.process.pid}, running since [^)]+\\): give this node its own HOOKLINE_NODE_ID, or stop that one first`));
    // Refused within about a lease time of meeting the live node's entry, not after a fight.
    expect(twin.elapsedMs).toBeLessThan(15_000);
    expect(live.logs(/taken by another node/)).toEqual([]);
    expect((await live.status()).partitions).toHaveLength(PARTITIONS);
  }, 90_000);

  it('a node restarted after kill -9 starts under its id while its previous incarnation\'s entry is still fresh, and takes its partitions back', async () => {
    const cluster = await startTestClusterForTest({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'node-id-restart' });
    const first = await cluster.start('n1');
    await cluster.waitForOwnership(['n1']);
    await first.kill9();

    const restarted = await cluster.start('n1');
    await cluster.waitForOwnership(['n1']);
    expect(restarted.child.errorLogs()).toEqual([]);
  }, 90_000);

  it('two processes started at once with one id: one serves, the other is refused naming the first', async () => {
    const cluster = await startTestClusterForTest({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'node-id-race' });
    const starts = [0, 1].map(() => {
      const dir = makeTempDir('hookline-node-id-race-');
      onTestFinished(() => dir.remove());
      return startChildNode(dir.path, cluster.settingsFor('n1'), { args: ['--cluster'], startTimeoutMs: 40_000 });
    });
    const outcomes = await Promise.allSettled(starts);
    const serving = outcomes.filter((outcome): outcome is PromiseFulfilledResult<ChildNode> => outcome.status === 'fulfilled').map((outcome) => outcome.value);
    for (const node of serving) onTestFinished(() => void node.process.kill('SIGKILL'));
    const refused = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected').map((outcome) => String(outcome.reason));

    expect(serving).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toContain(`hookline serve: HOOKLINE_NODE_ID=n1 is in use by a live node (host`);
    expect(refused[0]).toContain(`pid ${serving[0]!.process.pid},`);
  }, 90_000);
});
