import { beforeAll, describe, expect, it } from 'vitest';
import { countDirectoryKeys, openDirectory } from '../../src/cluster/key-directory.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The `default` project of a cluster started for the first time without HOOKLINE_API_KEY (issue 36):
 * three nodes started together as the README shows used to make a key each (two printed a different
 * "API key of project default", and `keys list` showed 2). The project is created in the directory
 * by compare-and-set: one node makes it and its key, and prints it; the others mirror it.
 */

const NODES = ['n1', 'n2', 'n3'];

beforeAll(() => ensureBuilt(), 120_000);

describe('the default project of a cluster', () => {
  it('three nodes started at once, without HOOKLINE_API_KEY, make one key, printed by one node, that opens the project on every node', async () => {
    const cluster = await startTestClusterForTest({ partitions: 64, label: 'default-key', settings: { HOOKLINE_API_KEY: '' } });
    const nodes = await Promise.all(NODES.map((nodeId) => cluster.start(nodeId)));
    const printed = () => nodes.flatMap((node) => node.child.lines.filter((line) => line.includes('API key of project "default"')).map((line) => ({ nodeId: node.nodeId, key: line.split(': ').pop()!.trim() })));
    // Printed just after the node logs that it serves.
    const [first] = await waitFor(() => (printed().length > 0 ? printed() : null), { message: 'a node to print the key of project default' });

    const directory = await openDirectory(cluster.nats, cluster.names.natsStream);
    expect(await countDirectoryKeys(directory, 'default')).toBe(1);
    for (const node of nodes) {
      const answer = await cluster.apiSettled(node, 'GET', '/v1/webhook', { key: first!.key });
      expect(answer.status, `the printed key on ${node.nodeId}`).toBe(404);
      expect(answer.body.error.code).toBe('webhook_not_configured');
    }
    expect(printed(), JSON.stringify(printed())).toHaveLength(1);
  }, 120_000);
});
