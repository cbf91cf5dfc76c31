import { describe, expect, it } from 'vitest';
import type { Delivery, HooklineClient } from '../../src/sdk/index.js';
import { ALL_TYPES, allDeliveries, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** The delivery log under concurrent writes, and its time bounds. */

/** Newest first by createdAt, ties by id descending. */
function expectNewestFirst(deliveries: Delivery[]) {
  for (let i = 1; i < deliveries.length; i++) {
    const [newer, older] = [deliveries[i - 1]!, deliveries[i]!];
    const createdOrder = Date.parse(newer.createdAt) - Date.parse(older.createdAt);
    expect(createdOrder > 0 || (createdOrder === 0 && newer.id > older.id), `${newer.id} (${newer.createdAt}) before ${older.id} (${older.createdAt})`).toBe(true);
  }
}

async function sendMany(client: HooklineClient, count: number, concurrency: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const n = next++;
        const answer = await client.sendEvent({ type: 'service.trigger.event', data: { label, n } });
        ids.push(answer.deliveryId!);
      }
    }),
  );
  return ids;
}

describe('paging through the log while events arrive', () => {
  it('with limit 7: no duplicates, every delivery that existed before paging, full pages until the last', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/held', status: 'paused', eventTypes: ALL_TYPES });
    const before = await sendMany(hookline.client, 60, 8, 'before');

    let inserting = true;
    const inserted: string[] = [];
    const background = (async () => {
      while (inserting) inserted.push(...(await sendMany(hookline.client, 4, 4, 'during')));
    })();

    const pages: Delivery[][] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await hookline.client.listDeliveriesPage({ limit: 7, ...(cursor ? { cursor } : {}) });
        pages.push(page.data);
        cursor = page.nextCursor ?? undefined;
        // Make sure writes land between pages even on a fast machine.
        inserted.push(...(await sendMany(hookline.client, 2, 2, 'between')));
      } while (cursor !== undefined);
    } finally {
      inserting = false;
      await background;
    }

    const seen = pages.flat().map((delivery) => delivery.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(before));
    expect(pages.length).toBeGreaterThanOrEqual(9);
    pages.slice(0, -1).forEach((page) => expect(page).toHaveLength(7));
    expect(pages.at(-1)!.length).toBeGreaterThan(0);
    expect(pages.at(-1)!.length).toBeLessThanOrEqual(7);
    expectNewestFirst(pages.flat());
    // Everything in the union is a real delivery of this project.
    const everything = new Set([...before, ...inserted]);
    expect(seen.every((id) => everything.has(id))).toBe(true);
    expect(inserted.length).toBeGreaterThan(0);
  });
});

describe('since and until', () => {
  it('since is inclusive and until exclusive, alone, together, with a status filter and across pages', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (delivery) => ({ status: Number(delivery.envelope.data.n) % 2 === 0 ? 204 : 500 }) });
    await configureReceiver(hookline, receiver);

    // Ten deliveries on ten distinct milliseconds, so every bound falls between two of them.
    for (let n = 0; n < 10; n++) {
      const startedAt = Date.now();
      const { deliveryId } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n } });
      await waitForDeliveryStatus(hookline.client, deliveryId!, n % 2 === 0 ? 'succeeded' : 'dead_lettered');
      await waitFor(() => Date.now() > startedAt + 1, { message: 'the clock to move on' });
    }
    const all = await allDeliveries(hookline.client);
    expect(all).toHaveLength(10);
    expect(new Set(all.map((delivery) => delivery.createdAt)).size).toBe(10);

    const at = (index: number) => all[index]!.createdAt; // all is newest first
    const ids = async (query: Parameters<HooklineClient['listDeliveriesPage']>[0]) => {
      const out: string[] = [];
      for await (const delivery of hookline.client.listDeliveries(query)) out.push(delivery.id);
      return out;
    };
    const expected = (filter: (delivery: Delivery) => boolean) => all.filter(filter).map((delivery) => delivery.id);
    const ms = (delivery: Delivery) => Date.parse(delivery.createdAt);

    expect(await ids({ since: at(4) })).toEqual(expected((delivery) => ms(delivery) >= Date.parse(at(4))));
    expect(await ids({ since: at(4) })).toHaveLength(5);
    expect(await ids({ until: at(4) })).toEqual(expected((delivery) => ms(delivery) < Date.parse(at(4))));
    expect(await ids({ until: at(4) })).toHaveLength(5);
    expect(await ids({ since: at(7), until: at(2) })).toEqual(all.slice(3, 8).map((delivery) => delivery.id));
    expect(await ids({ since: at(3), until: at(3) })).toEqual([]);
    expect(await ids({ since: at(7), until: at(2), limit: 2 })).toEqual(all.slice(3, 8).map((delivery) => delivery.id));
    // An offset other than +00:00 names the same instant.
    const shifted = new Date(Date.parse(at(4)) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    expect(await ids({ since: shifted })).toHaveLength(5);

    // The status index path applies the same bounds.
    for (const status of ['succeeded', 'dead_lettered'] as const) {
      expect(await ids({ status, since: at(7), until: at(2) })).toEqual(all.slice(3, 8).filter((delivery) => delivery.status === status).map((delivery) => delivery.id));
      expect(await ids({ status, since: at(7), until: at(2), limit: 1 })).toEqual(all.slice(3, 8).filter((delivery) => delivery.status === status).map((delivery) => delivery.id));
    }
    // And the event's delivery list.
    expect(await ids({ eventId: all[4]!.eventId, since: at(4) })).toEqual([all[4]!.id]);
    expect(await ids({ eventId: all[4]!.eventId, until: at(4) })).toEqual([]);
    // And so does redrive.
    expect(await hookline.client.redriveDeadLetters({ since: at(7), until: at(2) })).toEqual({ redriven: all.slice(3, 8).filter((delivery) => delivery.status === 'dead_lettered').length, wouldRedrive: null });
  });
});
