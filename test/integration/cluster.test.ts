import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { desiredPartitions } from '../../src/cluster/rendezvous.js';
import { verifyWebhookSignature } from '../../src/sdk/index.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestCluster, type ClusterNodeHandle, type TestCluster } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { SHARED_NATS_URL } from '../helpers/nats.js';
import { startReceiver, type Receiver, type ReceivedDelivery, type Reply } from '../helpers/receiver.js';
import { startFreezableProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode end to end: three `hookline serve --cluster` processes on one real NATS, 16
 * partitions, 2 s leases. Events reach the receiver once, any node answers any project's calls,
 * kill -9 of a node mid-retry loses nothing and keeps webhook-ids, and a joining node takes its
 * partitions without anything sent twice by two owners.
 */

const PARTITIONS = 16;
const LEASE_MS = 2_000;

interface Project {
  projectId: string;
  apiKey: string;
  secret: string;
  partition: number;
}

beforeAll(() => ensureBuilt(), 120_000);

/** Runs `work` over `items`, at most `limit` at a time. */
async function inParallel<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

/**
 * Creates projects round robin over the live nodes through the admin route. Each key is used at
 * once on every node (the directory makes it valid everywhere); the webhook is configured through
 * another node than the one that created the project, and the secret read through a third.
 */
async function createProjects(cluster: TestCluster, count: number, callbackUrl: string): Promise<Project[]> {
  const nodes = cluster.live();
  return inParallel(Array.from({ length: count }, (_, i) => i), 6, async (i) => {
    const { projectId, apiKey } = await cluster.createProject(nodes[i % nodes.length]!, `project-${i}`);
    for (const node of nodes) {
      const answer = await cluster.apiSettled(node, 'GET', '/v1/webhook', { key: apiKey });
      expect(answer.status, `key of ${projectId} on ${node.nodeId}`).toBe(404);
      expect(answer.body.error.code).toBe('webhook_not_configured');
    }
    const configured = await cluster.apiSettled(nodes[(i + 1) % nodes.length]!, 'PUT', '/v1/webhook', { key: apiKey, body: { callbackUrl, status: 'active', eventTypes: ALL_TYPES } });
    expect(configured.status).toBe(200);
    const secret = await cluster.apiSettled(nodes[(i + 2) % nodes.length]!, 'GET', '/v1/webhook/secret', { key: apiKey });
    expect(secret.status).toBe(200);
    return { projectId, apiKey, secret: secret.body.secret as string, partition: cluster.partitionOf(projectId) };
  });
}

/** `POST /v1/events` through `node`, retried (same id) while a partition moves; the delivery id. */
async function sendEvent(cluster: TestCluster, node: ClusterNodeHandle, project: Project, id: string, data: Record<string, unknown> = {}): Promise<string> {
  const answer = await cluster.apiSettled(node, 'POST', '/v1/events', { key: project.apiKey, body: { id, type: 'service.trigger.event', data: { projectId: project.projectId, ...data } } });
  expect([200, 202], `event ${id}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
  expect(answer.body.deliveryId).toMatch(/^dlv_/);
  return answer.body.deliveryId as string;
}

/** Publishes on the project's partition subject until JetStream acks (a busy shared NATS may time out or have no responder for a moment). */
async function publishUntilAcked(cluster: TestCluster, project: Project, id: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await publishEvent(cluster.nats, project.projectId, { id, type: 'service.trigger.event', data: { projectId: project.projectId } }, { subjectPrefix: cluster.names.natsSubjectPrefix, partitions: PARTITIONS, timeoutMs: 2_000 });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Every delivery of a project, through `node`, following the cursor. */
async function listDeliveries(cluster: TestCluster, node: ClusterNodeHandle, project: Project): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | null = null;
  do {
    const answer = await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries?limit=250${cursor ? `&cursor=${cursor}` : ''}`, { key: project.apiKey });
    expect(answer.status).toBe(200);
    all.push(...answer.body.data);
    cursor = answer.body.nextCursor;
  } while (cursor);
  return all;
}

/** Waits until every project's log (through the live nodes, round robin) holds `expected(p)` deliveries, all terminal. */
async function waitForTerminal(cluster: TestCluster, projects: Project[], expected: (project: Project) => number, timeoutMs: number): Promise<Map<string, any[]>> {
  const logs = new Map<string, any[]>();
  await waitFor(
    async () => {
      const nodes = cluster.live();
      await inParallel(projects, 8, async (project, i) => {
        const known = logs.get(project.projectId);
        if (known && known.length === expected(project) && known.every(isTerminal)) return;
        logs.set(project.projectId, await listDeliveries(cluster, nodes[i % nodes.length]!, project));
      });
      return projects.every((project) => {
        const deliveries = logs.get(project.projectId)!;
        return deliveries.length === expected(project) && deliveries.every(isTerminal);
      });
    },
    { timeoutMs, intervalMs: 200, message: 'every delivery in the log and terminal' },
  );
  return logs;
}

const isTerminal = (delivery: { status: string }) => delivery.status === 'succeeded' || delivery.status === 'dead_lettered';

/** Receipts grouped by webhook-id. */
function byWebhookId(received: readonly ReceivedDelivery[]): Map<string, ReceivedDelivery[]> {
  const groups = new Map<string, ReceivedDelivery[]>();
  for (const delivery of received) groups.set(delivery.webhookId, [...(groups.get(delivery.webhookId) ?? []), delivery]);
  return groups;
}

/** Every receipt verifies with its project's secret (the event data names the project). */
async function expectAllSigned(received: readonly ReceivedDelivery[], projects: Project[]): Promise<void> {
  const secrets = new Map(projects.map((project) => [project.projectId, project.secret]));
  for (const delivery of received) {
    const secret = secrets.get(String(delivery.envelope.data.projectId));
    expect(secret, `receipt for unknown project ${String(delivery.envelope.data.projectId)}`).toBeDefined();
    const valid = await verifyWebhookSignature({ id: delivery.webhookId, timestamp: delivery.webhookTimestamp, signature: delivery.signature, body: delivery.body, secret: secret! });
    expect(valid, `signature of ${delivery.webhookId}`).toBe(true);
  }
}

/**
 * At least once, but never twice by two owners: a webhook-id received n times must have n attempts
 * in its log, counting an attempt cut off by a handover (`ATTEMPT_INTERRUPTED`: the one in-flight
 * attempt a new owner makes again). Returns the receipts beyond the recorded attempts (duplicates)
 * and the interrupted attempts.
 */
async function expectDuplicatesWithinInFlightWindow(cluster: TestCluster, received: readonly ReceivedDelivery[], projects: Project[]): Promise<{ duplicates: number; interrupted: number }> {
  const byProject = new Map(projects.map((project) => [project.projectId, project]));
  let duplicates = 0;
  let interrupted = 0;
  const node = cluster.live()[0]!;
  // Received once is within the rule trivially (a terminal delivery has at least one attempt).
  const repeated = [...byWebhookId(received)].filter(([, receipts]) => receipts.length > 1);
  await inParallel(repeated, 8, async ([webhookId, receipts]) => {
    const project = byProject.get(String(receipts[0]!.envelope.data.projectId))!;
    const detail = await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${webhookId}`, { key: project.apiKey });
    expect(detail.status, `log entry of ${webhookId}`).toBe(200);
    const cutOff = (detail.body.transitions as Array<{ event: string }>).filter((transition) => transition.event === 'ATTEMPT_INTERRUPTED').length;
    interrupted += cutOff;
    expect(receipts.length, `receipts of ${webhookId} vs attempts ${detail.body.attempts} + interrupted ${cutOff}`).toBeLessThanOrEqual(detail.body.attempts + cutOff);
    duplicates += Math.max(0, receipts.length - detail.body.attempts);
  });
  return { duplicates, interrupted };
}

describe('a cluster of three nodes', () => {
  let cluster: TestCluster;
  let receiver: Receiver;
  let projects: Project[];
  /** Projects whose receiver answers 500 (for dead letters), by project id. */
  const failing = new Set<string>();
  /** The project given events too large to list through another node. */
  let largeEventsProjectId: string | undefined;

  beforeAll(async () => {
    receiver = await startReceiver({
      autoClose: false,
      respond: (delivery): Reply => (failing.has(String(delivery.envelope.data.projectId)) ? { status: 500 } : { status: 204 }),
    });
    cluster = await startTestCluster({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'three-nodes' });
    await Promise.all(['node-a', 'node-b', 'node-c'].map((nodeId) => cluster.start(nodeId)));
    await cluster.waitForOwnership(['node-a', 'node-b', 'node-c']);
    projects = await createProjects(cluster, 50, receiver.url);
  }, 90_000);

  afterAll(async () => {
    await cluster?.dispose();
    await receiver?.close();
  });

  it('each node logged its start steps in order, so a start that stalls says where', () => {
    const steps = [/^cluster: connected to NATS$/, /^cluster: directory, leases and changelog ready$/, /^cluster: (directory mirrored; )?taking partitions/, /^hookline is serving$/];
    for (const node of cluster.live()) {
      const messages = node.child.lines.map((line) => (line.startsWith('{') ? String(JSON.parse(line).msg) : ''));
      const lineOf = steps.map((step) => messages.findIndex((message) => step.test(message)));
      expect(lineOf.every((index) => index >= 0), `${node.nodeId}: ${lineOf}`).toBe(true);
      expect([...lineOf].sort((a, b) => a - b)).toEqual(lineOf);
    }
  });

  it('delivers events for 50 projects spread over the nodes, each exactly once', async () => {
    const owners = await cluster.ownership();
    const ownersOfProjects = new Set(projects.map((project) => owners.get(project.partition)));
    expect(ownersOfProjects).toEqual(new Set(['node-a', 'node-b', 'node-c']));

    // Four events a project: two by HTTP through two different nodes, two over NATS on the partition's subject.
    const nodes = cluster.live();
    const eventIds: string[] = [];
    await inParallel(projects, 8, async (project, i) => {
      for (let k = 0; k < 2; k++) {
        const id = `evt_spread_${i}_${k}`;
        await sendEvent(cluster, nodes[(i + k) % 3]!, project, id, { n: k });
        eventIds.push(id);
      }
      for (let k = 2; k < 4; k++) {
        const id = `evt_spread_${i}_${k}`;
        await publishUntilAcked(cluster, project, id);
        eventIds.push(id);
      }
    });
    expect(eventIds).toHaveLength(200);

    const logs = await waitForTerminal(cluster, projects, () => 4, 30_000);
    for (const deliveries of logs.values()) for (const delivery of deliveries) expect(delivery.status).toBe('succeeded');

    const receivedIds = receiver.received.map((delivery) => delivery.envelope.id);
    expect(new Set(receivedIds)).toEqual(new Set(eventIds));
    expect(receivedIds).toHaveLength(200); // once each
    const loggedIds = new Set([...logs.values()].flat().map((delivery) => delivery.id as string));
    expect(new Set(receiver.received.map((delivery) => delivery.webhookId))).toEqual(loggedIds);
    await expectAllSigned(receiver.received, projects);
  }, 60_000);

  it('a batch sent to a node that does not own the project is forwarded to the owner: per-event answers, one delivery each', async () => {
    const nodes = cluster.live();
    const owners = await cluster.ownership();
    const chosen = ['node-a', 'node-b', 'node-c'].map((nodeId) => projects.find((project) => owners.get(project.partition) === nodeId)!);
    for (const project of chosen) {
      const owner = owners.get(project.partition);
      const elsewhere = nodes.find((node) => node.nodeId !== owner)!;
      const ownerNode = nodes.find((node) => node.nodeId === owner)!;
      const events = Array.from({ length: 20 }, (_, k) => ({ id: `evt_batch_${project.projectId}_${k}`, type: 'service.trigger.event', data: { projectId: project.projectId, k } }));
      const answer = await cluster.apiSettled(elsewhere, 'POST', '/v1/events/batch', { key: project.apiKey, body: { events: [...events, events[0], { type: 'nope', data: {} }] } });
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(207);
      const items = answer.body.data as Array<{ status: number; id?: string; deliveryId?: string; error?: { code: string } }>;
      expect(items.slice(0, 20).map((item) => [item.status, item.id])).toEqual(events.map((event) => [202, event.id]));
      expect(items[20]).toEqual({ status: 200, id: events[0]!.id, deliveryId: items[0]!.deliveryId });
      expect(items[21]).toMatchObject({ status: 400, error: { code: 'validation_failed' } });
      // Stored by the owner: the same batch there is all repeats.
      const again = await cluster.apiSettled(ownerNode, 'POST', '/v1/events/batch', { key: project.apiKey, body: { events } });
      expect(again.status).toBe(202);
      expect(again.body.data).toEqual(items.slice(0, 20).map((item) => ({ ...item, status: 200 })));
      const ids = new Set(events.map((event) => event.id));
      await waitFor(() => receiver.received.filter((delivery) => ids.has(delivery.envelope.id)).length >= 20, { timeoutMs: 15_000, message: `the batch of ${project.projectId} delivered` });
      expect(receiver.received.filter((delivery) => ids.has(delivery.envelope.id)).map((delivery) => delivery.envelope.id).sort()).toEqual([...ids].sort());
    }

    // Over NATS max_payload (1 MB on the test server) a batch cannot be forwarded: 413, said plainly,
    // not a 503 the client would retry forever. The owner itself takes it.
    const project = chosen[0]!;
    // Few, large events (each under HOOKLINE_MAX_BODY): the project's log stays small for the tests after this one.
    const large = Array.from({ length: 6 }, (_, k) => ({ id: `evt_large_${k}`, type: 'service.trigger.event', data: { projectId: project.projectId, pad: 'x'.repeat(200_000) } }));
    const notOwner = nodes.find((node) => node.nodeId !== owners.get(project.partition))!;
    const refused = await cluster.apiSettled(notOwner, 'POST', '/v1/events/batch', { key: project.apiKey, body: { events: large } });
    expect(refused.status).toBe(413);
    expect(refused.body.error).toMatchObject({ code: 'payload_too_large', message: expect.stringContaining('max_payload') });
    const owner = nodes.find((node) => node.nodeId === owners.get(project.partition))!;
    expect((await cluster.apiSettled(owner, 'POST', '/v1/events/batch', { key: project.apiKey, body: { events: large } })).status).toBe(202);
    // Delivered before the next test compares the project's log and counts across nodes.
    await waitFor(() => large.every((event) => receiver.received.some((delivery) => delivery.envelope.id === event.id)), { timeoutMs: 15_000, message: 'the large batch delivered' });

    // The owner's answer must cross NATS too: a page of these events is over max_payload, said plainly
    // (it once ended the owning process); one of them alone fits, and the owner serves the page itself.
    const tooLarge = await cluster.apiSettled(notOwner, 'GET', '/v1/events?limit=250', { key: project.apiKey });
    expect(tooLarge.status).toBe(502);
    expect(tooLarge.body.error).toMatchObject({ code: 'answer_too_large', message: expect.stringContaining('max_payload') });
    expect((await cluster.apiSettled(notOwner, 'GET', '/v1/events/evt_large_0', { key: project.apiKey })).status).toBe(200);
    const ownPage = await cluster.apiSettled(owner, 'GET', '/v1/events?limit=250', { key: project.apiKey });
    expect(ownPage.status).toBe(200);
    expect(ownPage.body.data.map((event: { id: string }) => event.id)).toEqual(expect.arrayContaining(large.map((event) => event.id)));
    expect(cluster.live().map((node) => node.nodeId)).toEqual(nodes.map((node) => node.nodeId));
    largeEventsProjectId = project.projectId;
  }, 60_000);

  it('any node answers GET and POST for any project\'s deliveries and stored events', async () => {
    const nodes = cluster.live();
    const owners = await cluster.ownership();
    // Two projects owned by each node.
    // Not the project whose stored events are too large to list across NATS (the test above).
    const listable = projects.filter((project) => project.projectId !== largeEventsProjectId);
    const chosen = ['node-a', 'node-b', 'node-c'].flatMap((nodeId) => listable.filter((project) => owners.get(project.partition) === nodeId).slice(0, 2));
    expect(chosen).toHaveLength(6);

    for (const project of chosen) {
      const delivered = await sendEvent(cluster, nodes[0]!, project, `evt_any_${project.projectId}`);
      await waitFor(async () => (await cluster.apiSettled(nodes[1]!, 'GET', `/v1/logs/webhook-deliveries/${delivered}`, { key: project.apiKey })).body.status === 'succeeded', { timeoutMs: 10_000, message: `${delivered} succeeded` });
      const answers = await Promise.all(
        nodes.map(async (node) => ({
          list: await cluster.apiSettled(node, 'GET', '/v1/logs/webhook-deliveries?limit=250', { key: project.apiKey }),
          detail: await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${delivered}`, { key: project.apiKey }),
          webhook: await cluster.apiSettled(node, 'GET', '/v1/webhook', { key: project.apiKey }),
          stats: await cluster.apiSettled(node, 'GET', '/v1/stats/delivery-states', { key: project.apiKey }),
          events: await cluster.apiSettled(node, 'GET', '/v1/events?limit=250', { key: project.apiKey }),
          event: await cluster.apiSettled(node, 'GET', `/v1/events/evt_any_${project.projectId}`, { key: project.apiKey }),
          retry: await cluster.apiSettled(node, 'POST', `/v1/logs/webhook-deliveries/${delivered}/retry`, { key: project.apiKey }),
          // A client cannot pass a call off as already forwarded: it is still answered by the owner.
          forged: await cluster.apiSettled(node, 'GET', `/v1/logs/webhook-deliveries/${delivered}`, { key: project.apiKey, headers: { 'x-hookline-forwarded-by': 'node-a' } }),
        })),
      );
      for (const answer of answers) {
        expect(answer.list.status).toBe(200);
        expect(answer.list.body).toEqual(answers[0]!.list.body);
        expect(answer.list.body.data.map((delivery: { id: string }) => delivery.id)).toContain(delivered);
        expect(answer.detail.status).toBe(200);
        expect(answer.detail.body).toEqual(answers[0]!.detail.body);
        expect(answer.webhook.body).toEqual(answers[0]!.webhook.body);
        expect(answer.stats.body).toEqual(answers[0]!.stats.body);
        // Forwarded like every /v1 call: each node answers with the owner's events.
        expect(answer.event.status).toBe(200);
        expect(answer.event.body.id).toBe(`evt_any_${project.projectId}`);
        expect(answer.events.body).toEqual(answers[0]!.events.body);
        expect(answer.events.body.data).toContainEqual(answer.event.body);
        expect(answer.retry.status).toBe(409);
        expect(answer.retry.body.error.code).toBe('delivery_succeeded');
        expect(answer.forged.status).toBe(200);
        expect(answer.forged.body).toEqual(answers[0]!.detail.body);
      }
    }

    // POSTs that change state, each through a node that does not own the project.
    const project = chosen[0]!;
    const owner = owners.get(project.partition)!;
    const others = nodes.filter((node) => node.nodeId !== owner);

    // The dashboard's no-JavaScript log, through a node that does not own the project, shows the owner's log.
    const projectDeliveries = await listDeliveries(cluster, nodes[0]!, project);
    const page = await fetch(`${others[0]!.url}/ui/log`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ apiKey: project.apiKey, limit: '250' }).toString() });
    expect(page.status).toBe(200);
    const html = await page.text();
    for (const delivery of projectDeliveries) expect(html).toContain(delivery.id);

    failing.add(project.projectId);
    const doomed = await sendEvent(cluster, others[0]!, project, 'evt_any_doomed');
    const doomedToo = await sendEvent(cluster, others[1]!, project, 'evt_any_doomed_too');
    const deadLettered = async (id: string) => (await cluster.apiSettled(others[1]!, 'GET', `/v1/logs/webhook-deliveries/${id}`, { key: project.apiKey })).body.status === 'dead_lettered';
    await waitFor(async () => (await deadLettered(doomed)) && (await deadLettered(doomedToo)), { timeoutMs: 15_000, message: 'both dead-lettered' });
    failing.delete(project.projectId);

    const retried = await cluster.apiSettled(others[0]!, 'POST', `/v1/logs/webhook-deliveries/${doomed}/retry`, { key: project.apiKey });
    expect(retried.status).toBe(202);
    expect(retried.body.id).toBe(doomed);
    const redriven = await cluster.apiSettled(others[1]!, 'POST', '/v1/logs/webhook-deliveries/redrive', { key: project.apiKey, body: {} });
    expect(redriven.status).toBe(202);
    expect(redriven.body.redriven).toBe(1);
    const replayed = await cluster.apiSettled(others[1]!, 'POST', '/v1/events/evt_any_doomed/replay', { key: project.apiKey });
    expect(replayed.status).toBe(202);
    const replayId = replayed.body.deliveryId as string;
    expect(replayId).not.toBe(doomed);
    for (const id of [doomed, doomedToo, replayId]) {
      await waitFor(async () => (await cluster.apiSettled(others[0]!, 'GET', `/v1/logs/webhook-deliveries/${id}`, { key: project.apiKey })).body.status === 'succeeded', { timeoutMs: 10_000, message: `${id} succeeded` });
    }
    const doomedReceipts = receiver.received.filter((delivery) => delivery.envelope.id === 'evt_any_doomed');
    expect(new Set(doomedReceipts.map((delivery) => delivery.webhookId))).toEqual(new Set([doomed, replayId]));

    // Configuration through one node is what every node answers.
    const paused = await cluster.apiSettled(others[0]!, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES } });
    expect(paused.status).toBe(200);
    for (const node of nodes) expect((await cluster.apiSettled(node, 'GET', '/v1/webhook', { key: project.apiKey })).body.status).toBe('paused');
    const active = await cluster.apiSettled(others[1]!, 'PUT', '/v1/webhook', { key: project.apiKey, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES } });
    expect(active.body.status).toBe('active');
  }, 60_000);
});

describe('failover', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.dispose();
    cluster = undefined;
  });

  it('kill -9 of a node while its deliveries retry: partitions move within the lease time, same webhook-ids, nothing lost', async () => {
    /** Projects whose receiver always fails: their deliveries end dead-lettered. */
    const doomed = new Set<string>();
    const counts = new Map<string, number>();
    const receiver = await startReceiver({
      // Every delivery's first two attempts fail, slowly enough that some are in flight at the kill.
      respond: async (delivery): Promise<Reply> => {
        const seen = (counts.get(delivery.webhookId) ?? 0) + 1;
        counts.set(delivery.webhookId, seen);
        if (doomed.has(String(delivery.envelope.data.projectId)) || seen <= 2) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          return { status: 500 };
        }
        return { status: 204 };
      },
    });
    cluster = await startTestCluster({ partitions: PARTITIONS, leaseMs: LEASE_MS, settings: { HOOKLINE_RETRY_SCHEDULE: '0,1s,1s,1s,1s' }, label: 'failover' });
    const c = cluster;
    await Promise.all(['node-a', 'node-b', 'node-c'].map((nodeId) => c.start(nodeId)));
    const before = await c.waitForOwnership(['node-a', 'node-b', 'node-c']);
    const projects = await createProjects(c, 24, receiver.url);

    const victim = c.node('node-b');
    // At least two of the victim's projects, one of them doomed (24 random ids left it one in a CI run).
    while (projects.filter((project) => before.get(project.partition) === victim.nodeId).length < 2) projects.push(...(await createProjects(c, 2, receiver.url)));
    const victimProjects = projects.filter((project) => before.get(project.partition) === victim.nodeId);
    doomed.add(victimProjects[0]!.projectId);

    // Three events a project, through every node in turn.
    const nodes = c.live();
    const accepted = new Map<string, { project: Project; deliveryId: string | null }>();
    await inParallel(projects, 8, async (project, i) => {
      for (let k = 0; k < 3; k++) {
        const id = `evt_failover_${i}_${k}`;
        accepted.set(id, { project, deliveryId: await sendEvent(c, nodes[(i + k) % 3]!, project, id) });
      }
    });
    const victimDeliveries = [...accepted.values()].filter((entry) => before.get(entry.project.partition) === victim.nodeId).map((entry) => entry.deliveryId!);

    // Kill the owner as soon as each of its deliveries has had its first attempt: they are retrying (or mid-attempt).
    await waitFor(() => victimDeliveries.every((id) => (counts.get(id) ?? 0) >= 1), { timeoutMs: 15_000, intervalMs: 5, message: 'first attempts of the victim\'s deliveries' });
    const unfinished = victimDeliveries.filter((id) => (counts.get(id) ?? 0) < 3);
    expect(unfinished.length).toBeGreaterThan(0);
    const receiptsBeforeKill = receiver.received.length;
    const killedAt = Date.now();
    await victim.kill9();

    // Events for the victim's partitions published over NATS while they have no owner.
    for (const [j, project] of victimProjects.entries()) {
      const id = `evt_failover_nats_${j}`;
      await publishUntilAcked(c, project, id);
      accepted.set(id, { project, deliveryId: null });
    }

    const after = await c.waitForOwnership(['node-a', 'node-c'], 15_000);
    const movedWithinMs = Date.now() - killedAt;
    for (const [partition, owner] of before) if (owner !== victim.nodeId) expect(after.get(partition), `partition ${partition} stays`).toBe(owner);

    const expectedPerProject = (project: Project) => [...accepted.values()].filter((entry) => entry.project === project).length;
    const logs = await waitForTerminal(c, projects, expectedPerProject, 40_000);

    // Every accepted event ends delivered or dead-lettered, and the log (through the survivors) has every delivery.
    const logged = new Map([...logs.values()].flat().map((delivery) => [delivery.id as string, delivery]));
    for (const [eventId, { project, deliveryId }] of accepted) {
      const delivery = deliveryId ? logged.get(deliveryId) : [...logged.values()].find((entry) => entry.eventId === eventId);
      expect(delivery, `delivery of ${eventId} in the log`).toBeDefined();
      expect(delivery.status).toBe(doomed.has(project.projectId) ? 'dead_lettered' : 'succeeded');
    }
    expect(logged.size).toBe(accepted.size);

    // One webhook-id per event, the same before and after the move.
    const receipts = byWebhookId(receiver.received);
    for (const [eventId] of accepted) {
      const ids = new Set(receiver.received.filter((delivery) => delivery.envelope.id === eventId).map((delivery) => delivery.webhookId));
      expect(ids.size, `webhook-ids of ${eventId}`).toBe(1);
    }
    const spanningTheKill = unfinished.filter((id) => {
      const times = (receipts.get(id) ?? []).map((delivery) => delivery.receivedAt);
      return times.some((at) => at < killedAt) && times.some((at) => at > killedAt);
    });
    expect(spanningTheKill.length).toBeGreaterThan(0);
    const firstByNewOwner = Math.min(...receiver.received.slice(receiptsBeforeKill).filter((delivery) => victimDeliveries.includes(delivery.webhookId)).map((delivery) => delivery.receivedAt));

    const { duplicates, interrupted } = await expectDuplicatesWithinInFlightWindow(c, receiver.received, projects);
    await expectAllSigned(receiver.received, projects);
    console.info(
      `[cluster failover] partitions of ${victim.nodeId} moved ${movedWithinMs} ms after kill -9 (lease ${LEASE_MS} ms); first delivery by a new owner ${firstByNewOwner - killedAt} ms after; ` +
        `${unfinished.length} deliveries unfinished at the kill, ${spanningTheKill.length} received before and after it under the same webhook-id; ${interrupted} interrupted attempts redone, ${duplicates} duplicate receipts`,
    );
    // Takeover waits for the dead node's heartbeat and leases to expire (the lease time), then one rebalance round.
    expect(movedWithinMs).toBeLessThan(2 * LEASE_MS + 4_000);
  }, 90_000);

  it('a node joins: its partitions move to it and only them, and no delivery is sent twice by two owners', async () => {
    const receiver = await startReceiver({
      // Slow enough that attempts are in flight while partitions hand over.
      respond: async (): Promise<Reply> => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { status: 204 };
      },
    });
    cluster = await startTestCluster({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'join' });
    const c = cluster;
    await Promise.all(['node-a', 'node-b'].map((nodeId) => c.start(nodeId)));
    const before = await c.waitForOwnership(['node-a', 'node-b']);
    const joining = desiredPartitions('node-c', ['node-a', 'node-b', 'node-c'], PARTITIONS);
    const projects = await createProjects(c, 24, receiver.url);
    // Enough projects in the partitions node-c will take for the move to carry traffic.
    while (projects.filter((project) => joining.has(project.partition)).length < 4) projects.push(...(await createProjects(c, 2, receiver.url)));

    // Continuous load: HTTP through node-a and node-b, and NATS on the partition subjects.
    const acceptedIds = new Set<string>();
    let stopped = false;
    let sequence = 0;
    // Paced (a few hundred a second in all) so the machine's two cores keep up with the nodes.
    const pace = () => new Promise((resolve) => setTimeout(resolve, 10));
    const httpWorker = async (worker: number) => {
      while (!stopped) {
        const n = sequence++;
        const project = projects[n % projects.length]!;
        const id = `evt_join_${n}`;
        await sendEvent(c, c.node(worker % 2 === 0 ? 'node-a' : 'node-b'), project, id);
        acceptedIds.add(id);
        await pace();
      }
    };
    const natsWorker = async () => {
      while (!stopped) {
        const n = sequence++;
        const project = projects[n % projects.length]!;
        const id = `evt_join_${n}`;
        await publishUntilAcked(c, project, id);
        acceptedIds.add(id);
        await pace();
      }
    };
    const load = Promise.all([...Array.from({ length: 4 }, (_, worker) => httpWorker(worker)), natsWorker()]);
    // A failing sender stops the others; `await load` below reports its error.
    load.catch(() => (stopped = true));

    const t0 = Date.now();
    const phases: string[] = [];
    const phase = (name: string) => phases.push(`${name} +${Date.now() - t0} ms (${acceptedIds.size} accepted, ${receiver.received.length} received)`);
    await waitFor(() => acceptedIds.size >= 100, { timeoutMs: 20_000, message: '100 events accepted before the join' });
    phase('100 accepted');
    await c.start('node-c');
    phase('node-c serving');
    const after = await c.waitForOwnership(['node-a', 'node-b', 'node-c'], 20_000);
    phase('rebalanced');
    const joinedAt = acceptedIds.size;
    await waitFor(() => acceptedIds.size >= joinedAt + 100, { timeoutMs: 20_000, message: '100 more events accepted after the rebalance' });
    stopped = true;
    await load;
    phase('load stopped');

    // Only the partitions node-c wins moved, and all of them did.
    const taken = [...after].filter(([, owner]) => owner === 'node-c').map(([partition]) => partition);
    expect(new Set(taken)).toEqual(desiredPartitions('node-c', ['node-a', 'node-b', 'node-c'], PARTITIONS));
    expect(taken.length).toBeGreaterThan(0);
    for (const [partition, owner] of after) if (owner !== 'node-c') expect(owner, `partition ${partition}`).toBe(before.get(partition));
    const projectsMoved = projects.filter((project) => taken.includes(project.partition));
    expect(projectsMoved.length).toBeGreaterThan(0);

    const perProject = new Map<string, number>();
    for (const id of acceptedIds) {
      const n = Number(id.slice('evt_join_'.length));
      const project = projects[n % projects.length]!;
      perProject.set(project.projectId, (perProject.get(project.projectId) ?? 0) + 1);
    }
    await waitForTerminal(c, projects, (project) => perProject.get(project.projectId) ?? 0, 40_000);
    phase('all terminal');
    const receivedIds = new Set(receiver.received.map((delivery) => delivery.envelope.id));
    for (const id of acceptedIds) expect(receivedIds.has(id), `${id} delivered`).toBe(true);
    for (const id of receivedIds) expect(acceptedIds.has(id)).toBe(true);

    // One delivery (webhook-id) per event; any repeat of one is an interrupted in-flight attempt, counted.
    const webhookIdsPerEvent = new Map<string, Set<string>>();
    for (const delivery of receiver.received) webhookIdsPerEvent.set(delivery.envelope.id, (webhookIdsPerEvent.get(delivery.envelope.id) ?? new Set()).add(delivery.webhookId));
    for (const [eventId, ids] of webhookIdsPerEvent) expect(ids.size, `deliveries of ${eventId}`).toBe(1);
    const { duplicates, interrupted } = await expectDuplicatesWithinInFlightWindow(c, receiver.received, projects);
    await expectAllSigned(receiver.received, projects);
    console.info(`[cluster join] ${acceptedIds.size} events, ${taken.length} partitions moved to node-c (${projectsMoved.length} projects); ${duplicates} duplicate receipts, ${interrupted} interrupted attempts; ${phases.join(', ')}`);
  }, 90_000);

  it('the dead-letter gauge counts the partitions a node serves: summed over the nodes after a join, each dead letter once', async () => {
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    cluster = await startTestCluster({ partitions: PARTITIONS, leaseMs: LEASE_MS, label: 'gauge' });
    const c = cluster;
    await c.startSettled(['node-a', 'node-b']);
    const joining = desiredPartitions('node-c', ['node-a', 'node-b', 'node-c'], PARTITIONS);
    const projects = await createProjects(c, 6, receiver.url);
    while (projects.filter((project) => joining.has(project.partition)).length < 2) projects.push(...(await createProjects(c, 2, receiver.url)));
    await inParallel(projects, 4, (project, i) => sendEvent(c, c.node(i % 2 === 0 ? 'node-a' : 'node-b'), project, `evt_gauge_${i}`));
    await waitForTerminal(c, projects, () => 1, 30_000);
    const gauge = async (node: ClusterNodeHandle) => Number(/^hookline_dead_lettered_deliveries (\d+)$/m.exec(String((await c.api(node, 'GET', '/metrics')).body))?.[1]);
    const summed = async () => (await Promise.all(c.live().map(gauge))).reduce((sum, value) => sum + value, 0);
    expect(await summed()).toBe(projects.length);
    // node-c takes partitions whose dead letters node-a and node-b still hold in their stores.
    await c.start('node-c');
    await c.waitForOwnership(['node-a', 'node-b', 'node-c'], 20_000);
    await waitFor(async () => (await gauge(c.node('node-c'))) > 0, { timeoutMs: 10_000, message: "node-c counts the dead letters of the partitions it took" });
    expect(await summed()).toBe(projects.length);
  }, 90_000);

  it('a node cut off from NATS stops sending before its lease runs out; its late appends never overwrite the new owner', async () => {
    const nats = new URL(SHARED_NATS_URL);
    const proxy = await startFreezableProxy(nats.hostname, Number(nats.port || 4222));
    onTestFinished(() => proxy.close());
    let succeed = false;
    const receiver = await startReceiver({ respond: (): Reply => (succeed ? { status: 204 } : { status: 500 }) });
    cluster = await startTestCluster({ partitions: PARTITIONS, leaseMs: LEASE_MS, settings: { HOOKLINE_RETRY_SCHEDULE: ['0', ...Array(39).fill('300ms')].join(',') }, label: 'fencing' });
    const c = cluster;
    await Promise.all([c.start('node-a'), c.start('node-b'), c.start('node-x', { HOOKLINE_NATS_URL: proxy.url })]);
    const before = await c.waitForOwnership(['node-a', 'node-b', 'node-x']);
    const isolated = c.node('node-x');
    const xPartitions = new Set([...before].filter(([, owner]) => owner === 'node-x').map(([partition]) => partition));
    const projects = await createProjects(c, 12, receiver.url);
    while (projects.filter((project) => xPartitions.has(project.partition)).length < 3) projects.push(...(await createProjects(c, 2, receiver.url)));
    const xProjects = new Set(projects.filter((project) => xPartitions.has(project.partition)).map((project) => project.projectId));
    const inX = (delivery: ReceivedDelivery) => xProjects.has(String(delivery.envelope.data.projectId));

    const nodes = [c.node('node-a'), c.node('node-b')];
    await inParallel(projects, 6, async (project, i) => {
      for (let k = 0; k < 2; k++) await sendEvent(c, nodes[(i + k) % 2]!, project, `evt_fence_${i}_${k}`);
    });
    // node-x is retrying its deliveries every 300 ms when it loses NATS.
    await waitFor(() => receiver.received.filter(inX).length >= 2 * 2 * xProjects.size, { timeoutMs: 10_000, message: 'node-x retrying' });
    const frozenAt = Date.now();
    proxy.freeze();

    // It fences each of its partitions by itself, NATS being unreachable, within the lease time...
    await waitFor(() => isolated.logs(/lease not renewed in time/).length >= xPartitions.size, { timeoutMs: 10_000, message: 'node-x fencing its partitions' });
    const fencedAt = Math.max(...isolated.logs(/lease not renewed in time/).map((record) => Number(record.time)));
    expect(fencedAt - frozenAt).toBeLessThan(LEASE_MS);
    // ...before the others take its partitions over.
    await c.waitForOwnership(['node-a', 'node-b'], 15_000);
    // A new owner acts from the moment its restore is done.
    const takenAt = Math.min(
      ...nodes.flatMap((node) => node.logs(/^partition restored from the changelog$/)).filter((record) => xPartitions.has(Number(record.partition)) && Number(record.time) > frozenAt).map((record) => Number(record.time)),
    );
    expect(takenAt).toBeGreaterThan(fencedAt);
    // Nobody sends for node-x's partitions between its fence and the takeover (30 ms for an answer on its way).
    const inGap = receiver.received.filter((delivery) => inX(delivery) && delivery.receivedAt > fencedAt + 30 && delivery.receivedAt < takenAt);
    expect(inGap.map((delivery) => `${delivery.webhookId}@${delivery.receivedAt - fencedAt}ms`)).toEqual([]);
    // Attempts node-x made shortly before it lost NATS (their records still on the way) or while
    // cut off: it held the lease, but these may never reach the changelog. "Shortly" is a second:
    // with CI's suites side by side on 2 cores an outcome's append took over 250 ms (one receipt more).
    const unreplicated = new Map<string, number>();
    for (const delivery of receiver.received) {
      if (inX(delivery) && delivery.receivedAt >= frozenAt - 1_000 && delivery.receivedAt <= fencedAt + 30) unreplicated.set(delivery.webhookId, (unreplicated.get(delivery.webhookId) ?? 0) + 1);
    }

    // NATS comes back: node-x's buffered appends reach the server (and are refused), it rejoins and
    // takes its partitions back from the changelog over its own stale copy.
    proxy.thaw();
    await c.waitForOwnership(['node-a', 'node-b', 'node-x'], 20_000);
    succeed = true;
    await waitForTerminal(c, projects, () => 2, 30_000);

    const byProject = new Map(projects.map((project) => [project.projectId, project]));
    for (const [webhookId, receipts] of byWebhookId(receiver.received)) {
      const project = byProject.get(String(receipts[0]!.envelope.data.projectId))!;
      const detail = await c.apiSettled(isolated, 'GET', `/v1/logs/webhook-deliveries/${webhookId}`, { key: project.apiKey });
      expect(detail.body.status).toBe('succeeded');
      const interrupted = (detail.body.transitions as Array<{ event: string }>).filter((transition) => transition.event === 'ATTEMPT_INTERRUPTED').length;
      // Every receipt is in the log, except those attempts of node-x.
      expect(receipts.length, `receipts of ${webhookId}`).toBeLessThanOrEqual(detail.body.attempts + interrupted + (unreplicated.get(webhookId) ?? 0));
    }
    console.info(`[cluster fencing] node-x fenced ${fencedAt - frozenAt} ms after losing NATS, its partitions taken ${takenAt - frozenAt} ms after; ${[...unreplicated.values()].reduce((a, b) => a + b, 0)} attempts made while cut off`);
  }, 90_000);
});
