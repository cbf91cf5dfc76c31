import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { projectWithOneEvent, startTestClusterForTest, type ApiAnswer, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Nemesis finding 7: a node back after a long absence holds, in its LMDB, the partition's records as
 * they were when it died. Once the partition has moved and progressed on another node, every read
 * through the returning node must give the owner's view, or 503 `partition_moving` with
 * Retry-After, from its first answer on, through its taking the partition back: never its old copy.
 */

beforeAll(() => ensureBuilt(), 120_000);

/** Reads through `node` until `until` passes, each answer kept with what was read. */
async function readThroughout(cluster: TestCluster, node: ClusterNodeHandle, key: string, paths: string[], until: () => boolean): Promise<Array<{ path: string; answer: ApiAnswer }>> {
  const answers: Array<{ path: string; answer: ApiAnswer }> = [];
  while (!until()) {
    for (const path of paths) answers.push({ path, answer: await cluster.api(node, 'GET', path, { key }) });
  }
  return answers;
}

describe('a node back after its partition moved and progressed elsewhere', () => {
  it('answers reads with the owner\'s view, or 503 with Retry-After, never its own old copy', async () => {
    const cluster = await startTestClusterForTest({ partitions: 4, label: 'stale-reads' });
    const dataDirs = new Map(['node-a', 'node-b'].map((nodeId) => [nodeId, makeTempDir(`hookline-stale-${nodeId}-`)]));
    try {
      const settingsOf = (nodeId: string) => ({ HOOKLINE_DATA_DIR: dataDirs.get(nodeId)!.path });
      await Promise.all(['node-a', 'node-b'].map((nodeId) => cluster.start(nodeId, settingsOf(nodeId))));
      const before = await cluster.waitForOwnership(['node-a', 'node-b']);

      // Until the owner is killed, the receiver never answers: its LMDB keeps the deliveries unfinished.
      let answering = false;
      const held: Array<(reply: Reply) => void> = [];
      const receiver = await startReceiver({ respond: () => (answering ? { status: 204 } : new Promise<Reply>((resolve) => held.push(resolve))) });
      const { project, deliveryId } = await projectWithOneEvent(cluster, cluster.node('node-a'), 'stale-reads', receiver.url);
      const ownerId = before.get(cluster.partitionOf(project.projectId))!;
      const otherId = ownerId === 'node-a' ? 'node-b' : 'node-a';
      const deliveryIds = [deliveryId];
      for (let n = 1; n < 5; n++) {
        const ingested = await cluster.apiSettled(cluster.node(ownerId), 'POST', '/v1/events', { key: project.apiKey, body: { type: 'service.trigger.event', data: { n } } });
        expect(ingested.status).toBe(202);
        deliveryIds.push(ingested.body.deliveryId as string);
      }
      await waitFor(() => receiver.received.length === deliveryIds.length, { timeoutMs: 10_000, intervalMs: 20, message: 'a first attempt of every delivery' });
      await cluster.node(ownerId).kill9();

      // The other node takes the partition over, sends again, and the receiver answers now.
      answering = true;
      for (const release of held.splice(0)) release({ status: 204 });
      await cluster.waitForOwnership([otherId], 15_000);
      for (let n = 5; n < 8; n++) {
        const ingested = await cluster.apiSettled(cluster.node(otherId), 'POST', '/v1/events', { key: project.apiKey, body: { type: 'service.trigger.event', data: { n } } });
        expect(ingested.status).toBe(202);
        deliveryIds.push(ingested.body.deliveryId as string);
      }
      const ownersView = await waitFor(
        async () => {
          const answer = await cluster.apiSettled(cluster.node(otherId), 'GET', '/v1/logs/webhook-deliveries?limit=100', { key: project.apiKey });
          const data = answer.body.data as Array<{ id: string; status: string }>;
          return data.length === deliveryIds.length && data.every((delivery) => delivery.status === 'succeeded') ? data : null;
        },
        { timeoutMs: 20_000, intervalMs: 100, message: 'every delivery succeeded on the new owner' },
      );
      expect(ownersView.map((delivery) => delivery.id).sort()).toEqual([...deliveryIds].sort());

      // The old owner comes back with its LMDB and takes its partition back; read through it all along.
      const returned = await cluster.start(ownerId, settingsOf(ownerId));
      let settled = false;
      const settling = cluster.waitForOwnership(['node-a', 'node-b'], 20_000).finally(() => (settled = true));
      const paths = ['/v1/logs/webhook-deliveries?limit=100', `/v1/logs/webhook-deliveries/${deliveryId}`, '/v1/stats/delivery-states'];
      const answers = await readThroughout(cluster, returned, project.apiKey, paths, () => settled);
      await settling;
      // And once settled: the partition is back on the returning node, which now answers from its restored copy.
      for (const path of paths) answers.push({ path, answer: await cluster.api(returned, 'GET', path, { key: project.apiKey }) });

      const stale: string[] = [];
      for (const { path, answer } of answers) {
        if (answer.status === 503) {
          expect(answer.body.error.code).toBe('partition_moving');
          expect(answer.headers.get('retry-after')).not.toBeNull();
          continue;
        }
        expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(200);
        if (path.startsWith('/v1/stats')) {
          const counts = answer.body.counts as Record<string, number>;
          const unfinished = Object.entries(counts).filter(([status, count]) => status !== 'succeeded' && count > 0);
          if (counts.succeeded !== deliveryIds.length || unfinished.length > 0) stale.push(`${path}: ${JSON.stringify(counts)}`);
        } else if (path.includes('?')) {
          const data = answer.body.data as Array<{ id: string; status: string; attempts: number }>;
          const wrong = data.filter((delivery) => delivery.status !== 'succeeded');
          if (data.length !== deliveryIds.length || wrong.length > 0) stale.push(`${path}: ${data.length} deliveries, ${wrong.map((delivery) => `${delivery.id} ${delivery.status} after ${delivery.attempts}`).join(', ')}`);
        } else if (answer.body.status !== 'succeeded') {
          stale.push(`${path}: ${answer.body.status} after ${answer.body.attempts} attempts`);
        }
      }
      expect(stale, `answers through ${ownerId} unlike the owner's view (of ${answers.length})`).toEqual([]);
    } finally {
      for (const live of cluster.live()) await live.kill9();
      for (const dir of dataDirs.values()) dir.remove();
    }
  }, 120_000);
});
