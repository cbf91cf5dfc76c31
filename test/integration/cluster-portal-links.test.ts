import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * Portal links across `hookline serve --cluster` processes on the real NATS: a link made on one
 * node opens the project on every node (the owner's and the others', which forward the call with
 * the token), a read-only one is refused writes everywhere, and a revocation on one node refuses
 * the project's links on all of them.
 */

beforeAll(() => ensureBuilt(), 120_000);

function tokenOf(url: string): string {
  return new URL(url).hash.slice('#portal='.length);
}

async function statusOf(cluster: TestCluster, node: ClusterNodeHandle, method: string, path: string, key: string, body?: unknown): Promise<number> {
  return (await cluster.apiSettled(node, method, path, { key, ...(body !== undefined ? { body } : {}) })).status;
}

describe('portal links in a cluster', () => {
  it('a link made on one node works on every node; read-only is read-only everywhere; a revocation on any node refuses it on all', async () => {
    const cluster = await startTestClusterForTest({ partitions: 4, label: 'portal-links' });
    const nodeA = await cluster.start('node-a');
    const nodeB = await cluster.start('node-b');
    await cluster.waitForOwnership(['node-a', 'node-b']);
    const acme = await cluster.createProject(nodeA, 'acme');
    const receiver = await startReceiver();
    const webhook = { callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] };

    const readOnly = await cluster.apiSettled(nodeA, 'POST', '/v1/portal-links', { key: acme.apiKey, body: { readOnly: true } });
    expect(readOnly.status).toBe(201);
    // The link names the node it was asked of, not the partition's owner.
    expect(new URL(readOnly.body.url).origin).toBe(new URL(nodeA.url).origin);
    const readWrite = await cluster.apiSettled(nodeB, 'POST', '/v1/portal-links', { key: acme.apiKey, body: {} });
    expect(readWrite.status).toBe(201);
    const [viewer, editor] = [tokenOf(readOnly.body.url), tokenOf(readWrite.body.url)];

    for (const node of [nodeA, nodeB]) {
      for (const token of [viewer, editor]) {
        expect(await statusOf(cluster, node, 'GET', '/v1/logs/webhook-deliveries', token), `${node.nodeId} GET`).toBe(200);
        expect((await cluster.apiSettled(node, 'GET', '/v1/portal-session', { key: token })).body.projectId).toBe(acme.projectId);
      }
      expect(await statusOf(cluster, node, 'PUT', '/v1/webhook', viewer, webhook), `${node.nodeId} read-only PUT`).toBe(403);
      expect(await statusOf(cluster, node, 'PUT', '/v1/webhook', editor, webhook), `${node.nodeId} read-write PUT`).toBe(200);
      expect(await statusOf(cluster, node, 'DELETE', '/v1/portal-links', editor), `${node.nodeId} DELETE with a link`).toBe(403);
    }

    const revoked = await cluster.apiSettled(nodeB, 'DELETE', '/v1/portal-links', { key: acme.apiKey });
    expect(revoked).toMatchObject({ status: 200, body: { revoked: 2 } });
    for (const node of [nodeA, nodeB]) {
      for (const token of [viewer, editor]) expect(await statusOf(cluster, node, 'GET', '/v1/logs/webhook-deliveries', token), `${node.nodeId} after revocation`).toBe(401);
      expect(await statusOf(cluster, node, 'GET', '/v1/logs/webhook-deliveries', acme.apiKey)).toBe(200);
    }
  }, 120_000);
});
