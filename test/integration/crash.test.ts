import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { HooklineClient } from '../../src/sdk/index.js';
import { ensureBuilt, startChildNode, type ChildNode } from '../helpers/child-node.js';
import { ALL_TYPES, API_KEY, allDeliveries } from '../helpers/hookline.js';
import { startReceiver, type Receiver, type Reply } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The node as a separate process: `kill -9` in the middle of a stream of events loses nothing that
 * was acknowledged, and SIGTERM drains and exits 0, leaving LMDB so that a restart resumes.
 */

const BASE_SETTINGS = {
  HOOKLINE_API_KEY: API_KEY,
  HOOKLINE_ALLOW_PRIVATE_NETWORKS: '1',
  HOOKLINE_RETRY_JITTER: '0',
  HOOKLINE_DELIVERY_TIMEOUT: '5s',
};

beforeAll(() => ensureBuilt(), 120_000);

/** A child node killed with SIGKILL when the test ends, if it is still running. */
async function startChild(dataDir: string, settings: Record<string, string>): Promise<ChildNode> {
  const child = await startChildNode(dataDir, { ...BASE_SETTINGS, ...settings });
  onTestFinished(async () => {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGKILL');
      await child.exited;
    }
  });
  return child;
}

/** A child node whose webhook points at `receiver`, which learns the secret to verify with. */
async function startChildFor(receiver: Receiver, dataDir: string, settings: Record<string, string>): Promise<{ child: ChildNode; client: HooklineClient }> {
  const child = await startChild(dataDir, settings);
  const client = new HooklineClient({ baseUrl: child.url, apiKey: API_KEY });
  await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
  receiver.secret = (await client.getSecret()).secret;
  return { child, client };
}

function tempDataDir(): string {
  const dir = makeTempDir('hookline-crash-');
  onTestFinished(() => dir.remove());
  return dir.path;
}

async function postEvent(baseUrl: string, id: string, n: number): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, type: 'service.trigger.event', data: { n } }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('crash safety', () => {
  it('after kill -9 while a backlog larger than the window drains, and a restart, every acknowledged event is delivered', async () => {
    const dataDir = tempDataDir();
    const delivered = new Set<string>();
    // A slow receiver, so the kill lands while most of the backlog still waits on disk.
    const receiver = await startReceiver({
      respond: async (delivery): Promise<Reply> => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        delivered.add(delivery.envelope.id);
        return { status: 204 };
      },
    });
    const settings = { HOOKLINE_DELIVERY_WINDOW: '20', HOOKLINE_ENDPOINT_CONCURRENCY: '4' };
    const { child: first, client } = await startChildFor(receiver, dataDir, settings);
    await client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    const TOTAL = 400;
    const ids = Array.from({ length: TOTAL }, (_, n) => `evt_backlog_${String(n).padStart(3, '0')}`);
    for (let start = 0; start < TOTAL; start += 20) {
      const statuses = await Promise.all(ids.slice(start, start + 20).map((id, i) => postEvent(first.url, id, start + i)));
      for (const status of statuses) expect(status).toBe(202);
    }
    await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitFor(() => delivered.size >= 60, { timeoutMs: 10_000, message: 'the backlog draining' });
    first.process.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(delivered.size).toBeLessThan(TOTAL);

    const second = await startChild(dataDir, settings);
    expect((await second.waitForLog(/^resumed waiting deliveries/)).waiting).toBeGreaterThan(0);
    await waitFor(() => ids.every((id) => delivered.has(id)), {
      timeoutMs: 30_000,
      message: `every acknowledged event delivered (missing: ${ids.filter((id) => !delivered.has(id)).slice(0, 5).join(', ')}…)`,
    });
    const deliveries = await waitFor(
      async () => {
        const all = await allDeliveries(new HooklineClient({ baseUrl: second.url, apiKey: API_KEY }));
        return all.length === TOTAL && all.every((delivery) => delivery.status === 'succeeded') ? all : null;
      },
      { timeoutMs: 10_000, message: 'every delivery in the log to be succeeded' },
    );
    expect(deliveries.map((delivery) => delivery.eventId).sort()).toEqual(ids);
  }, 60_000);

  it('after kill -9 mid-stream and a restart, every acknowledged event is delivered and in the log', async () => {
    const dataDir = tempDataDir();
    // Every delivery fails its first attempt, so retrying deliveries are on disk when the node dies.
    const firstSeen = new Set<string>();
    const delivered = new Set<string>();
    const receiver = await startReceiver({
      respond: (delivery): Reply => {
        if (!firstSeen.has(delivery.webhookId)) {
          firstSeen.add(delivery.webhookId);
          return { status: 500 };
        }
        delivered.add(delivery.envelope.id);
        return { status: 204 };
      },
    });
    // The circuit breaker off: the first attempts of a burst all fail, which would open it, and its
    // unsent attempts would dead-letter deliveries on this short schedule before the first probe.
    const settings = { HOOKLINE_RETRY_SCHEDULE: '0,100ms,100ms,100ms,100ms', HOOKLINE_CIRCUIT_FAILURES: '0' };
    const { child: first, client } = await startChildFor(receiver, dataDir, settings);

    const TOTAL = 300;
    const ids = Array.from({ length: TOTAL }, (_, n) => `evt_crash_${String(n).padStart(3, '0')}`);
    const acknowledged = new Set<string>();
    const unanswered: number[] = [];
    let next = 0;
    let killed = false;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (!killed && next < TOTAL) {
          const n = next++;
          const status = await postEvent(first.url, ids[n]!, n).catch(() => null);
          if (status === 202 || status === 200) acknowledged.add(ids[n]!);
          else unanswered.push(n);
          if (acknowledged.size >= 100 && !killed) {
            killed = true;
            first.process.kill('SIGKILL');
          }
        }
      }),
    );
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const acknowledgedBeforeCrash = new Set(acknowledged);
    expect(acknowledgedBeforeCrash.size).toBeGreaterThanOrEqual(100);
    expect(acknowledgedBeforeCrash.size).toBeLessThan(TOTAL);

    // Restart on the same data; send whatever was never answered or never sent (same ids: a repeat is harmless).
    const second = await startChild(dataDir, settings);
    // The last acknowledged delivery cannot have finished (its second attempt is 100 ms away), so
    // something was live on disk and resumed.
    expect((await second.waitForLog(/^resumed waiting deliveries/)).waiting).toBeGreaterThan(0);
    const again = new HooklineClient({ baseUrl: second.url, apiKey: API_KEY });
    const remaining = [...unanswered, ...Array.from({ length: TOTAL - next }, (_, i) => next + i)];
    for (let start = 0; start < remaining.length; start += 10) {
      const batch = remaining.slice(start, start + 10);
      const statuses = await Promise.all(batch.map((n) => postEvent(second.url, ids[n]!, n)));
      statuses.forEach((status, i) => {
        expect([200, 202]).toContain(status);
        acknowledged.add(ids[batch[i]!]!);
      });
    }
    expect(acknowledged.size).toBe(TOTAL);

    await waitFor(() => [...acknowledged].every((id) => delivered.has(id)), {
      timeoutMs: 20_000,
      message: `every acknowledged event delivered (missing: ${[...acknowledged].filter((id) => !delivered.has(id)).slice(0, 5).join(', ')}…)`,
    });
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    const receivedIds = new Set(receiver.received.map((delivery) => delivery.envelope.id));
    for (const id of acknowledgedBeforeCrash) expect(receivedIds.has(id), id).toBe(true);

    // The log has one delivery per event (a repeat after the crash made none), all succeeded.
    const deliveries = await waitFor(
      async () => {
        const all = await allDeliveries(again);
        return all.every((delivery) => delivery.status === 'succeeded') ? all : null;
      },
      { timeoutMs: 10_000, message: 'every delivery in the log to be succeeded' },
    );
    expect(deliveries.map((delivery) => delivery.eventId).sort()).toEqual([...ids].sort());

    second.process.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(first.errorLogs()).toEqual([]);
    expect(second.errorLogs()).toEqual([]);
  }, 60_000);
});

describe('crash safety of batch ingest', () => {
  it('after kill -9 with batches in flight and a restart, every event answered 202/200 (alone or in a 207) is stored and delivered', async () => {
    const dataDir = tempDataDir();
    const delivered = new Set<string>();
    const receiver = await startReceiver({
      respond: (delivery): Reply => {
        delivered.add(delivery.envelope.id);
        return { status: 204 };
      },
    });
    const settings = { HOOKLINE_RETRY_SCHEDULE: '0,100ms,100ms,100ms,100ms' };
    const { child: first, client } = await startChildFor(receiver, dataDir, settings);

    // Batches of 100; every fifth event without an id (acknowledged by the id the answer gives), and
    // one invalid event per batch, so that every answer is a 207 whose accepted items must survive.
    const BATCH = 100;
    const acknowledged = new Map<string, { given: boolean; n: number }>();
    let batchNumber = 0;
    let killed = false;
    const sendBatch = async (b: number) => {
      const events = Array.from({ length: BATCH }, (_, i) => {
        const n = b * BATCH + i;
        if (i === 0) return { type: 'service.unknown', data: {} };
        return { ...(i % 5 === 0 ? {} : { id: `evt_batch_${n}` }), type: 'service.trigger.event', data: { n } };
      });
      const response = await fetch(`${first.url}/v1/events/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      const body = (await response.json()) as { data: Array<{ status: number; id?: string }> };
      expect(response.status).toBe(207);
      body.data.forEach((item, i) => {
        if (item.status === 202 || item.status === 200) acknowledged.set(item.id!, { given: i % 5 !== 0, n: b * BATCH + i });
      });
    };
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!killed) {
          // A batch cut off by the kill has no answer: none of its events is counted as acknowledged.
          await sendBatch(batchNumber++).catch(() => null);
          if (acknowledged.size >= 8 * (BATCH - 1) && !killed) {
            killed = true;
            first.process.kill('SIGKILL');
          }
        }
      }),
    );
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(acknowledged.size).toBeGreaterThanOrEqual(8 * (BATCH - 1));

    const second = await startChild(dataDir, settings);
    await waitFor(() => [...acknowledged.keys()].every((id) => delivered.has(id)), {
      timeoutMs: 20_000,
      message: `every acknowledged event delivered (missing: ${[...acknowledged.keys()].filter((id) => !delivered.has(id)).slice(0, 5).join(', ')}…)`,
    });
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);

    // Stored, too: sent again, every acknowledged event with an id is a repeat.
    const withIds = [...acknowledged].filter(([, { given }]) => given).map(([id, { n }]) => ({ id, type: 'service.trigger.event', data: { n } }));
    const again = new HooklineClient({ baseUrl: second.url, apiKey: API_KEY });
    for (let start = 0; start < withIds.length; start += 1000) {
      const items = await again.sendEvents(withIds.slice(start, start + 1000) as never);
      expect(items.filter((item) => !(item.ok && item.duplicate))).toEqual([]);
    }

    second.process.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect([...first.errorLogs(), ...second.errorLogs()]).toEqual([]);
  }, 60_000);
});

describe('SIGTERM', () => {
  it('exits 0, and a restart resumes a delivery that was retrying', async () => {
    const dataDir = tempDataDir();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    // A second attempt 1 s after the first: ample time to stop the node in between.
    const settings = { HOOKLINE_RETRY_SCHEDULE: '0,1s' };
    const { child: first, client } = await startChildFor(receiver, dataDir, settings);
    const sent = await client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(async () => (await client.getDelivery(sent.deliveryId!)).status === 'retrying', { message: 'the delivery to be retrying' });

    first.process.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(receiver.received).toHaveLength(1);

    const restartedAt = Date.now();
    const second = await startChild(dataDir, settings);
    const again = new HooklineClient({ baseUrl: second.url, apiKey: API_KEY });
    const detail = await waitFor(
      async () => {
        const current = await again.getDelivery(sent.deliveryId!);
        return current.status === 'succeeded' ? current : null;
      },
      { timeoutMs: 10_000, message: 'the resumed delivery to succeed' },
    );
    expect(detail).toMatchObject({ attempts: 2, maxAttempts: 2 });
    const resumed = detail.transitions.filter((transition) => transition.from === 'retrying');
    expect(resumed).toEqual([{ from: 'retrying', to: 'delivering', event: 'START_ATTEMPT', at: expect.any(String) }]);
    expect(Date.parse(resumed[0]!.at)).toBeGreaterThanOrEqual(restartedAt - 5);
    expect(receiver.received.map((delivery) => delivery.webhookId)).toEqual([sent.deliveryId, sent.deliveryId]);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);

    second.process.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect([...first.errorLogs(), ...second.errorLogs()]).toEqual([]);
  }, 30_000);

  it('stops taking events but finishes an in-flight attempt before exiting 0', async () => {
    const dataDir = tempDataDir();
    let release: (reply: Reply) => void = () => {};
    const held = new Promise<Reply>((resolve) => (release = resolve));
    const receiver = await startReceiver({ respond: () => held });
    const first = await startChild(dataDir, {});
    const client = new HooklineClient({ baseUrl: first.url, apiKey: API_KEY });
    await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    const sent = await client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(() => receiver.received.length === 1, { message: 'the attempt to reach the receiver' });

    first.process.kill('SIGTERM');
    await first.waitForLog(/^draining/);
    const refused = await fetch(`${first.url}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'service.trigger.event', data: {} }),
    });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: 'shutting_down' } });

    release({ status: 204 });
    expect(await first.exited).toEqual({ code: 0, signal: null });

    const second = await startChild(dataDir, {});
    const detail = await new HooklineClient({ baseUrl: second.url, apiKey: API_KEY }).getDelivery(sent.deliveryId!);
    expect(detail).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(receiver.received).toHaveLength(1);
    expect(await allDeliveries(new HooklineClient({ baseUrl: second.url, apiKey: API_KEY }))).toHaveLength(1);
    expect([...first.errorLogs(), ...second.errorLogs()]).toEqual([]);
  }, 30_000);
});
