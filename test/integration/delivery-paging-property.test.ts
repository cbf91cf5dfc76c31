import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/sdk/index.js';
import { ADMIN_KEY, ALL_TYPES, startTestHookline } from '../helpers/hookline.js';

/**
 * Property: for any number of deliveries (1–60) and any page size (1–20), following nextCursor
 * yields every delivery exactly once, newest first (createdAt, then id, descending), and every page
 * but the last is full. Each run gets a project of its own on one real node, so counts are exact.
 */

const SEED = 0x6f9_2026;

describe('log paging (property)', () => {
  it('yields every delivery exactly once, newest first, in full pages but the last', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    let run = 0;

    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 20 }), async (count, limit) => {
        const project = await hookline.api('POST', '/admin/v1/projects', { body: { name: `property-${run++}` }, key: ADMIN_KEY });
        expect(project.status).toBe(201);
        const client = hookline.clientFor(project.body.apiKey);
        await client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/held', status: 'paused', eventTypes: ALL_TYPES });
        const answers = await Promise.all(Array.from({ length: count }, (_, n) => client.sendEvent({ type: ALL_TYPES[n % 3]!, data: { n } })));
        const created = answers.map((answer) => answer.deliveryId!);

        const pages: Delivery[][] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listDeliveriesPage({ limit, ...(cursor ? { cursor } : {}) });
          pages.push(page.data);
          cursor = page.nextCursor ?? undefined;
          expect(pages.length).toBeLessThanOrEqual(count + 1);
        } while (cursor !== undefined);

        const seen = pages.flat();
        expect(seen.map((delivery) => delivery.id).sort()).toEqual([...created].sort());
        expect(pages).toHaveLength(Math.ceil(count / limit));
        pages.slice(0, -1).forEach((page) => expect(page).toHaveLength(limit));
        expect(pages.at(-1)!.length).toBeGreaterThan(0);
        const sorted = [...seen].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
        expect(seen.map((delivery) => delivery.id)).toEqual(sorted.map((delivery) => delivery.id));
      }),
      { seed: SEED, numRuns: 30 },
    );
  }, 60_000);
});
