import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { startTestCluster, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `hookline keys revoke` in cluster mode, against `hookline serve --cluster` processes on the real
 * NATS: the key leaves the cluster's directory, every node refuses it (each had it mirrored in its
 * LMDB), the project's other keys keep working, and a node that was down during the revocation
 * refuses the key when it comes back.
 */

beforeAll(() => ensureBuilt(), 120_000);

/** Within this of the command's exit, every node refuses the key (the README's promise is milliseconds). */
const REFUSED_WITHIN_MS = 2_000;

describe('hookline keys revoke --cluster', () => {
  it('deletes the key from the directory: every node answers 401 to it while the other keys answer 200; a node down meanwhile refuses it on its return', async () => {
    const cluster = await startTestCluster({ partitions: 4, label: 'key-revoke' });
    const dirB = makeTempDir('hookline-cluster-revoke-b-');
    try {
      const firstKey = `default-key-${cluster.names.natsStream}`;
      const secondKey = `second-key-${cluster.names.natsStream}`;
      const nodeA = await cluster.start('node-a');
      // A later node with another HOOKLINE_API_KEY adds it to project "default": two keys.
      const settingsB = { HOOKLINE_DATA_DIR: dirB.path, HOOKLINE_API_KEY: secondKey };
      let nodeB = await cluster.start('node-b', settingsB);
      await cluster.waitForOwnership(['node-a', 'node-b']);
      const acme = await cluster.createProject(nodeA, 'acme');
      for (const node of [nodeA, nodeB]) for (const key of [firstKey, secondKey, acme.apiKey]) expect(await status(cluster, node, key, true), node.nodeId).toBe(200);

      // The nodes' own settings, as `docker compose exec` on a node would have them.
      const clusterEnv = { HOOKLINE_CLUSTER: '1', HOOKLINE_NATS_URL: SHARED_NATS_URL, HOOKLINE_NATS_STREAM: cluster.names.natsStream };
      const where = `in the cluster's directory (KV ${cluster.names.natsStream}_directory on ${SHARED_NATS_URL})`;
      const revoked = captureIo(clusterEnv, `${firstKey}\n`);
      expect(await runCli(['keys', 'revoke', '--key-stdin'], revoked), revoked.err()).toBe(0);
      expect(revoked.out()).toBe(`revoked a key of project "default" ${where}; 1 key left\n`);
      for (const node of [nodeA, nodeB]) await refused(cluster, node, firstKey);
      for (const node of [nodeA, nodeB]) for (const key of [secondKey, acme.apiKey]) expect(await status(cluster, node, key, true), node.nodeId).toBe(200);

      const again = captureIo(clusterEnv);
      expect(await runCli(['keys', 'revoke', '--key', firstKey], again)).toBe(1);
      expect(again.err()).toBe(`hookline keys revoke: no such key ${where}: it was revoked already or is another cluster's (check HOOKLINE_NATS_URL and HOOKLINE_NATS_STREAM)\n`);

      // The last key of a project is counted in the directory, and kept without --force.
      const last = captureIo(clusterEnv);
      expect(await runCli(['keys', 'revoke', '--key', acme.apiKey], last)).toBe(1);
      expect(last.err()).toBe(
        `hookline keys revoke: that is the last key of project "${acme.projectId}": run hookline keys create --project ${acme.projectId} --cluster, move the clients to the new key and revoke this one after, or pass --force to leave the project without a key\n`,
      );
      expect(await status(cluster, nodeB, acme.apiKey, true)).toBe(200);

      const mixed = captureIo(clusterEnv);
      expect(await runCli(['keys', 'revoke', '--key', acme.apiKey, '--data-dir', dirB.path], mixed)).toBe(2);
      expect(mixed.err()).toContain("--data-dir is a single node's: a cluster's keys are in its NATS directory, which --cluster (on by HOOKLINE_CLUSTER=1) revokes from");

      // Revoked with every node down (node-b's LMDB still holds the key): it comes back refusing it.
      await nodeA.kill9();
      await nodeB.kill9();
      const { HOOKLINE_CLUSTER: _, ...withoutClusterVariable } = clusterEnv;
      const forced = captureIo(withoutClusterVariable);
      expect(await runCli(['keys', 'revoke', '--cluster', '--force', '--key', acme.apiKey], forced), forced.err()).toBe(0);
      expect(forced.out()).toBe(`revoked a key of project "${acme.projectId}" ${where}; it has no key now (hookline keys create --project ${acme.projectId} --cluster makes one)\n`);
      nodeB = await cluster.start('node-b', settingsB);
      await cluster.waitForOwnership(['node-b']);
      expect(await status(cluster, nodeB, acme.apiKey, true)).toBe(401);
      expect(await status(cluster, nodeB, firstKey, true)).toBe(401);
      expect(await status(cluster, nodeB, secondKey, true)).toBe(200);
    } finally {
      await cluster.dispose();
      dirB.remove();
    }
  }, 120_000);
});

/** The status of `GET /v1/logs/webhook-deliveries` with `key`; `settled` retries a partition moving (503). */
async function status(cluster: TestCluster, node: ClusterNodeHandle, key: string, settled = false): Promise<number> {
  return (await (settled ? cluster.apiSettled : cluster.api)(node, 'GET', '/v1/logs/webhook-deliveries', { key })).status;
}

async function refused(cluster: TestCluster, node: ClusterNodeHandle, key: string): Promise<void> {
  await waitFor(async () => (await status(cluster, node, key)) === 401, { timeoutMs: REFUSED_WITHIN_MS, message: `node ${node.nodeId} to refuse the revoked key` });
}
