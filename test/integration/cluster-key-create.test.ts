import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { captureIo } from '../helpers/cli.js';
import { startTestCluster, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `hookline keys create --cluster`, against `hookline serve --cluster` processes on the real NATS:
 * an existing project gets a second key in the cluster's directory, every node accepts it at once,
 * and the old key is then revoked with `keys revoke --cluster` (no --force: it is not the last),
 * which is how a key is replaced without a gap. A project the directory lacks is refused.
 */

beforeAll(() => ensureBuilt(), 120_000);

/** Within this of the command's exit, every node refuses a revoked key (the README's promise is milliseconds). */
const REFUSED_WITHIN_MS = 2_000;

describe('hookline keys create --cluster', () => {
  it("adds a key to a project in the cluster's directory: every node accepts it; the old key revoked after, the new one keeps working; an unknown project exits 1", async () => {
    const cluster = await startTestCluster({ partitions: 4, label: 'key-create' });
    try {
      const nodeA = await cluster.start('node-a');
      const nodeB = await cluster.start('node-b');
      await cluster.waitForOwnership(['node-a', 'node-b']);
      const acme = await cluster.createProject(nodeA, 'acme');
      const where = `in the cluster's directory (KV ${cluster.names.natsStream}_directory on ${SHARED_NATS_URL})`;
      // The nodes' own NATS settings, without HOOKLINE_CLUSTER: --cluster is given.
      const natsEnv = { HOOKLINE_NATS_URL: SHARED_NATS_URL, HOOKLINE_NATS_STREAM: cluster.names.natsStream };

      const created = captureIo(natsEnv);
      expect(await runCli(['keys', 'create', '--project', acme.projectId, '--cluster'], created), created.err()).toBe(0);
      const newKey = new RegExp(`^API key for project "${acme.projectId}" \\(shown once\\): (hk_[A-Za-z0-9_-]{43})\\n$`).exec(created.out())?.[1];
      expect(newKey, created.out()).toBeDefined();
      // Asked at once: a node whose watch has not brought the key yet reads it from the directory.
      for (const node of [nodeA, nodeB]) for (const key of [acme.apiKey, newKey!]) expect(await status(cluster, node, key), `${node.nodeId} ${key}`).toBe(200);

      const revoked = captureIo(natsEnv);
      expect(await runCli(['keys', 'revoke', '--cluster', '--key', acme.apiKey], revoked), revoked.err()).toBe(0);
      expect(revoked.out()).toBe(`revoked a key of project "${acme.projectId}" ${where}; 1 key left\n`);
      for (const node of [nodeA, nodeB]) await refused(cluster, node, acme.apiKey);
      for (const node of [nodeA, nodeB]) expect(await status(cluster, node, newKey!), node.nodeId).toBe(200);

      // The new key is now the project's last: kept, and the message says how to replace it.
      const last = captureIo(natsEnv);
      expect(await runCli(['keys', 'revoke', '--cluster', '--key', newKey!], last)).toBe(1);
      expect(last.err()).toBe(
        `hookline keys revoke: that is the last key of project "${acme.projectId}": run hookline keys create --project ${acme.projectId} --cluster, move the clients to the new key and revoke this one after, or pass --force to leave the project without a key\n`,
      );

      // HOOKLINE_CLUSTER=1 (a node's own environment) makes --cluster the default.
      const unknown = captureIo({ ...natsEnv, HOOKLINE_CLUSTER: '1' });
      expect(await runCli(['keys', 'create', '--project', 'prj_nosuchproject'], unknown)).toBe(1);
      expect(unknown.out()).toBe('');
      expect(unknown.err()).toBe(
        `hookline keys create: no project "prj_nosuchproject" ${where}: --project takes the id of an existing project (prj_…); POST /admin/v1/projects on a node creates one, with its first key\n`,
      );
    } finally {
      await cluster.dispose();
    }
  }, 120_000);
});

/** The status of `GET /v1/logs/webhook-deliveries` with `key`, retried while a partition moves (503). */
async function status(cluster: TestCluster, node: ClusterNodeHandle, key: string): Promise<number> {
  return (await cluster.apiSettled(node, 'GET', '/v1/logs/webhook-deliveries', { key })).status;
}

async function refused(cluster: TestCluster, node: ClusterNodeHandle, key: string): Promise<void> {
  await waitFor(async () => (await cluster.api(node, 'GET', '/v1/logs/webhook-deliveries', { key })).status === 401, { timeoutMs: REFUSED_WITHIN_MS, message: `node ${node.nodeId} to refuse the revoked key` });
}
