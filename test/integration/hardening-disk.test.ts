import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TestContext } from 'vitest';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { ApiAnswer, TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * When the data directory cannot take more (HOOKLINE_MAX_DATA_SIZE reached, or its filesystem down
 * to the reserve the store keeps free), ingest answers 503 with Retry-After and stores nothing,
 * nothing accepted before is lost, and what is stored keeps being delivered. lmdb-js grows its map
 * by itself, so "cannot grow" is the quota, or a real, nearly full filesystem (a small tmpfs, when
 * the test may mount one).
 */

/** Posts events of about `padBytes` until one is refused; returns the accepted ids and the refusal. */
async function fillUntilRefused(hookline: TestHookline, padBytes = 3000, maxEvents = 5000) {
  const accepted: string[] = [];
  const pad = 'x'.repeat(padBytes);
  for (let n = 0; n < maxEvents; n++) {
    const answer = await hookline.api('POST', '/v1/events', { body: { id: `evt_fill_${n}`, type: 'service.trigger.event', data: { n, pad } } });
    if (answer.status !== 202) return { accepted, refusal: answer };
    accepted.push(answer.body.id);
  }
  throw new Error(`still accepting after ${maxEvents} events`);
}

/**
 * The deliveries not `succeeded`, each with its status and how it got there, so a failed wait says
 * which write went missing instead of only a count.
 */
function notSucceeded(hookline: TestHookline): string {
  const store = hookline.node.engine.store;
  const rows: string[] = [];
  for (const { key, value: head } of store.deliveries.getRange()) {
    if (head.status === 'succeeded') continue;
    const value = store.getDelivery(key[0], head.id)!;
    const path = value.transitions.map((hop) => `${hop.event}->${hop.to}`).join(' ');
    const attempts = value.attemptLog.map((attempt) => attempt.errorCode ?? attempt.statusCode).join(',');
    rows.push(`${value.id} ${value.status} [${path}] attempts: ${attempts}`);
  }
  return `${rows.length} not succeeded${rows.length > 0 ? `: ${rows.slice(0, 5).join('; ')}` : ''}`;
}

/** Waits until `count` deliveries are `succeeded` in the log; a timeout names the ones that are not. */
async function waitForAllSucceeded(hookline: TestHookline, count: number, timeoutMs = 5_000): Promise<void> {
  await waitFor(() => hookline.node.engine.store.countByStatus('succeeded') === count, { timeoutMs, message: 'all succeeded in the log' }).catch((error: Error) => {
    throw new Error(`${error.message}; ${notSucceeded(hookline)}`);
  });
}

function expectStorageFull(refusal: ApiAnswer) {
  expect(refusal.status, JSON.stringify(refusal.body)).toBe(503);
  expect(refusal.body.error.code).toBe('storage_full');
  expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(refusal.body.error.message).toMatch(/nothing was stored/);
}

describe('disk full: HOOKLINE_MAX_DATA_SIZE', () => {
  it('ingest turns 503 storage_full; events accepted before are kept and delivered; the limit lifted, ingest resumes', async () => {
    const receiver = await startReceiver();
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());

    // A fresh store's size, measured on the store itself, and a quota a little above it.
    const fresh = await startTestHookline({ dataDir: dir.path });
    await configureReceiver(fresh, receiver, { status: 'paused', eventTypes: ['service.trigger.event'] });
    const { lastPageNumber, pageSize } = fresh.node.engine.store.root.getStats() as { lastPageNumber: number; pageSize: number };
    await fresh.close();
    const maxDataBytes = lastPageNumber * pageSize + 256 * 1024;

    // Attempts get 5 s, not the helper's 500 ms: on a loaded CI machine (three suites on two cores)
    // 25 of them timed out, the circuit opened and they were dead-lettered, failing the wait below.
    const hookline = await startTestHookline({ dataDir: dir.path, maxDataBytes, deliveryTimeoutMs: 5_000 });
    const { accepted, refusal } = await fillUntilRefused(hookline);
    expect(accepted.length).toBeGreaterThan(10);
    expectStorageFull(refusal);
    expect(refusal.body.error.message).toMatch(/HOOKLINE_MAX_DATA_SIZE/);
    // Refused means not stored: the refused id was not taken.
    expect(hookline.node.engine.store.getEvent('default', `evt_fill_${accepted.length}`)).toBeUndefined();
    // Every kind of event is refused, not only matching ones; the rest of the API still answers.
    expectStorageFull(await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.disabled', data: {} } }));
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=1')).status).toBe(200);
    expect((await fetch(`${hookline.url}/healthz`)).status).toBe(200);

    // Delivery of what is stored continues: activate, and every accepted event arrives exactly once.
    await configureReceiver(hookline, receiver, { status: 'active', eventTypes: ['service.trigger.event'] });
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size >= accepted.length, { timeoutMs: 15_000, message: `${accepted.length} deliveries` });
    // At least once: a slow answer can be retried, so compare the distinct events.
    expect([...new Set(receiver.received.map((delivery) => delivery.envelope.id))].sort()).toEqual([...accepted].sort());
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    await waitForAllSucceeded(hookline, accepted.length);
    expectStorageFull(await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {} } }));
    await hookline.close();

    // Restarted without the limit: nothing accepted was lost, and ingest works again.
    const lifted = await startTestHookline({ dataDir: dir.path });
    for (const id of accepted) expect(lifted.node.engine.store.getEvent('default', id), id).toBeDefined();
    expect(lifted.node.engine.store.countByStatus('succeeded')).toBe(accepted.length);
    expect((await lifted.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {} } })).status).toBe(202);
  });
});

interface Tmpfs {
  path: string;
  resize(size: string): void;
  unmount(): void;
}

/** Mounts a tmpfs of `size` at a fresh directory (root on Linux only); null when that is not possible here. */
function mountTmpfs(size: string): Tmpfs | null {
  if (process.platform !== 'linux' || process.getuid?.() !== 0 || process.env.HOOKLINE_TEST_NO_MOUNT === '1') return null;
  const dir = makeTempDir('hookline-tmpfs-');
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir.path], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    dir.remove();
    return null;
  }
  return {
    path: dir.path,
    resize: (newSize) => {
      const remounted = spawnSync('mount', ['-o', `remount,size=${newSize}`, dir.path], { encoding: 'utf8' });
      if (remounted.status !== 0) throw new Error(`remount failed: ${remounted.stderr}`);
    },
    unmount: () => {
      spawnSync('umount', ['-l', dir.path]);
      dir.remove();
    },
  };
}

/**
 * A 32 MB tmpfs for the running test, unmounted when it finishes, with an empty data directory in
 * it. Skips the test where no tmpfs can be mounted.
 */
function smallDiskForTest(context: TestContext): { disk: Tmpfs; dataDir: string } {
  const disk = mountTmpfs('32m');
  if (!disk) return context.skip('needs root on Linux to mount a small tmpfs');
  onTestFinished(() => disk.unmount());
  const dataDir = join(disk.path, 'data');
  mkdirSync(dataDir);
  return { disk, dataDir };
}

/**
 * Takes every free byte of the filesystem holding `path` with a file there (as another process
 * filling the disk would); returns how to give the space back.
 */
function takeAllSpace(path: string): { giveBack(): void } {
  const filler = join(path, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (let chunk = 1024 * 1024; chunk >= 512; chunk /= 2) {
      const zeros = Buffer.alloc(chunk);
      for (;;) {
        try {
          writeSync(fd, zeros);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return { giveBack: () => rmSync(filler) };
}

describe('disk full: the filesystem itself', () => {
  it('a nearly full disk turns ingest into 503 storage_full before LMDB meets ENOSPC; stored events keep being delivered; nothing accepted is lost', async (context) => {
    // 32 MB: the store keeps 5% (1.6 MB) free, room for the state changes of what was accepted
    // (a few hundred large events; each delivery's record grows by its attempts and transitions).
    const { disk, dataDir } = smallDiskForTest(context);

    const receiver = await startReceiver();
    // The receiver shares this process's event loop with the node: on a loaded machine the first
    // wave of 50 concurrent 48 KB attempts can outlast the helper's 500 ms timeout three times in a
    // row and be dead-lettered (a correct outcome, but not what this test is about).
    const hookline = await startTestHookline({ dataDir, deliveryTimeoutMs: 5_000 });
    await configureReceiver(hookline, receiver, { status: 'paused', eventTypes: ['service.trigger.event'] });

    const { accepted, refusal } = await fillUntilRefused(hookline, 48 * 1024);
    expect(accepted.length).toBeGreaterThan(100);
    expectStorageFull(refusal);
    // Refused at the reserve, however fast the events come: the disk's end is never reached.
    expect(refusal.body.error.message).toMatch(/disk is nearly full/);
    expect(hookline.node.engine.store.getEvent('default', `evt_fill_${accepted.length}`)).toBeUndefined();
    expect((await fetch(`${hookline.url}/healthz`)).status).toBe(200);

    // What is stored is delivered from the reserve, the disk still at it.
    await configureReceiver(hookline, receiver, { status: 'active', eventTypes: ['service.trigger.event'] });
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size >= accepted.length, { timeoutMs: 20_000, message: `${accepted.length} deliveries` });
    // At least once: a slow answer can be retried, so compare the distinct events.
    expect([...new Set(receiver.received.map((delivery) => delivery.envelope.id))].sort()).toEqual([...accepted].sort());
    await waitForAllSucceeded(hookline, accepted.length);
    expectStorageFull(await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {} } }));

    // Space comes back: ingest resumes without a restart.
    disk.resize('64m');
    await waitFor(async () => (await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.disabled', data: {} } })).status === 202, { timeoutMs: 5_000, message: 'ingest after space is freed' });
    await hookline.close();

    // Nothing accepted earlier was lost.
    const restarted = await startTestHookline({ dataDir });
    for (const id of accepted) expect(restarted.node.engine.store.getEvent('default', id), id).toBeDefined();
    expect(restarted.node.engine.store.countByStatus('succeeded')).toBe(accepted.length);
  });

  it('bursts of concurrent events are refused at the reserve too: the disk keeps its documented reserve free and nothing refused is stored', async (context) => {
    const { dataDir } = smallDiskForTest(context);
    const hookline = await startTestHookline({ dataDir });

    // 64 events of 48 KB at once (3 MB, twice the 1.6 MB reserve): each burst is checked before
    // any of it is on disk.
    const pad = 'x'.repeat(48 * 1024);
    const accepted: string[] = [];
    const refused: Array<{ id: string; answer: ApiAnswer }> = [];
    for (let burst = 0; refused.length === 0; burst++) {
      expect(burst, 'bursts before a refusal').toBeLessThan(20);
      const ids = Array.from({ length: 64 }, (_, n) => `evt_burst_${burst}_${n}`);
      const answers = await Promise.all(ids.map((id) => hookline.api('POST', '/v1/events', { body: { id, type: 'service.trigger.event', data: { pad } } })));
      answers.forEach((answer, n) => (answer.status === 202 ? accepted.push(ids[n]!) : refused.push({ id: ids[n]!, answer })));
    }
    for (const { answer } of refused) {
      expectStorageFull(answer);
      expect(answer.body.error.message).toMatch(/disk is nearly full/);
    }
    // The reserve is min(128 MiB, 5%) of the disk (README); one event may reach into it, no burst.
    const { bavail, blocks, bsize } = statfsSync(dataDir);
    expect(bavail * bsize).toBeGreaterThan(0.05 * blocks * bsize - 2 * pad.length);
    for (const id of accepted) expect(hookline.node.engine.store.getEvent('default', id), id).toBeDefined();
    for (const { id } of refused) expect(hookline.node.engine.store.getEvent('default', id), id).toBeUndefined();
  });

  it('the disk fills to its very end while deliveries are made: once space comes back every outcome reaches the log, without a restart or a second delivery', async (context) => {
    const { disk, dataDir } = smallDiskForTest(context);

    // The receiver holds its answers until the disk is full, so the outcomes meet it.
    let diskTaken!: () => void;
    const full = new Promise<void>((resolve) => (diskTaken = resolve));
    const receiver = await startReceiver({ respond: () => full.then(() => ({ status: 204 })) });
    const hookline = await startTestHookline({ dataDir, deliveryTimeoutMs: 10_000 });
    await configureReceiver(hookline, receiver, { status: 'paused', eventTypes: ['service.trigger.event'] });
    const accepted: string[] = [];
    const pad = 'x'.repeat(16 * 1024);
    for (let n = 0; n < 200; n++) {
      const answer = await hookline.api('POST', '/v1/events', { body: { id: `evt_end_${n}`, type: 'service.trigger.event', data: { n, pad } } });
      expect(answer.status).toBe(202);
      accepted.push(answer.body.id);
    }

    // Another process takes the rest of the disk while attempts are in flight: their outcomes, and
    // every state change after them, meet ENOSPC.
    await configureReceiver(hookline, receiver, { status: 'active', eventTypes: ['service.trigger.event'] });
    await waitFor(() => receiver.received.length >= 10, { message: 'attempts in flight' });
    const filler = takeAllSpace(disk.path);
    // An event arriving now may pass the reserve check made before the space went, and meet the
    // full disk in its commit: the same 503, nothing stored.
    const late = await hookline.api('POST', '/v1/events', { body: { id: 'evt_end_late', type: 'service.trigger.event', data: { pad } } });
    expectStorageFull(late);
    diskTaken();
    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size >= accepted.length, { timeoutMs: 20_000, message: `${accepted.length} deliveries` });
    const sent = receiver.received.length;

    // Space comes back: what was delivered reaches the log as succeeded, nothing is sent again.
    filler.giveBack();
    await waitForAllSucceeded(hookline, accepted.length, 10_000);
    expect(receiver.received.length).toBe(sent);
    await hookline.close();

    const restarted = await startTestHookline({ dataDir });
    expect(restarted.node.engine.store.countByStatus('succeeded')).toBe(accepted.length);
    expect(restarted.node.engine.store.getEvent('default', 'evt_end_late')).toBeUndefined();
    for (const id of accepted) {
      const event = restarted.node.engine.store.getEvent('default', id)!;
      const delivery = restarted.node.engine.store.getDelivery('default', event.deliveryIds[0]!)!;
      // The log holds every step, in order: none lost to a failed write.
      expect(delivery.transitions.map((hop) => hop.to).slice(-2), delivery.id).toEqual(['delivering', 'succeeded']);
      expect(delivery.attemptLog.length, delivery.id).toBe(delivery.attempts);
    }
    await restarted.close();
    expect(receiver.received.length).toBe(sent);
  });
});
