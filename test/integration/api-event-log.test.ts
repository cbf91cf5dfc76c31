import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/sdk/index.js';
import { ADMIN_KEY, ALL_TYPES, ISO_WITH_OFFSET, startTestHookline } from '../helpers/hookline.js';

/**
 * `GET /v1/events` and `GET /v1/events/:eventId`: the stored events with their envelopes, paged
 * newest first by id like the delivery log. Every answer is checked against docs/openapi.json.
 */

const SEED = 0x14_e7e;

describe('GET /v1/events paging (property)', () => {
  it('lists every event stored before the first page exactly once, in descending id order, while events keep arriving', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 15 }),
        fc.array(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), { maxLength: 5 }),
        fc.integer({ min: 0, max: 4 }),
        async (count, limit, givenIds, arrivingPerPage) => {
          const project = await hookline.api('POST', '/admin/v1/projects', { body: { name: `events-${run++}` }, key: ADMIN_KEY });
          const client = hookline.clientFor(project.body.apiKey);
          // Ids a producer gives sort by their text among Hookline's own: the order is the ids', not the times'.
          const given = [...new Set(givenIds)].map((id) => client.sendEvent({ id: `evt_${id}`, type: 'service.trigger.event', data: { given: id } }));
          const made = Array.from({ length: count }, (_, n) => client.sendEvent({ type: ALL_TYPES[n % 3]!, data: { n, text: 'grüße 東京 🚀' } }));
          const before = (await Promise.all([...given, ...made])).map((answer) => answer.id);

          const listed: StoredEvent[] = [];
          const arrived: string[] = [];
          let cursor: string | undefined;
          let pages = 0;
          do {
            const page = await client.listEventsPage({ limit, ...(cursor ? { cursor } : {}) });
            expect(page.data.length).toBeLessThanOrEqual(limit);
            if (page.nextCursor !== null) expect(page.data).toHaveLength(limit);
            listed.push(...page.data);
            cursor = page.nextCursor ?? undefined;
            // Ingest between pages: below a cursor a producer gave, a new event is still listed, once.
            const answers = await Promise.all(Array.from({ length: arrivingPerPage }, (_, n) => client.sendEvent({ type: 'service.trigger.disabled', data: { arriving: n } })));
            arrived.push(...answers.map((answer) => answer.id));
            // Each page takes at least one event never listed before, so paging ends.
            expect(++pages).toBeLessThanOrEqual(before.length + arrived.length + 1);
          } while (cursor !== undefined);

          const ids = listed.map((event) => event.id);
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids).toEqual([...ids].sort().reverse());
          expect(ids.filter((id) => before.includes(id)).sort()).toEqual([...before].sort());
          expect(ids.filter((id) => !before.includes(id) && !arrived.includes(id))).toEqual([]);
        },
      ),
      { seed: SEED, numRuns: 25 },
    );
  }, 90_000);
});

describe('GET /v1/events', () => {
  it('gives each event with its envelope parsed (payload) and as the exact text signed and sent (body)', async () => {
    const hookline = await startTestHookline();
    const { id } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { text: 'launch 🚀\u2028done', n: 1.5 }, metadata: { tenant_id: 'acme' } });
    await hookline.client.sendEvent({ type: 'service.connected_account.expired', data: {} });
    const envelope = Buffer.from(hookline.node.engine.store.getEvent('default', id)!.envelope);

    const one = await hookline.api('GET', `/v1/events/${id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ id, type: 'service.trigger.event', createdAt: expect.stringMatching(ISO_WITH_OFFSET), payload: JSON.parse(envelope.toString('utf8')), body: envelope.toString('utf8') });
    expect(Buffer.from(one.body.body, 'utf8').equals(envelope)).toBe(true);

    const all = await hookline.api('GET', '/v1/events?limit=1');
    expect(all.body.data.map((event: StoredEvent) => event.type)).toEqual(['service.connected_account.expired']);
    expect(all.body.nextCursor).toEqual(expect.stringMatching(/^evt_/));
    const byType = await hookline.api('GET', '/v1/events?eventType=service.trigger.event');
    expect(byType.body).toEqual({ data: [one.body], nextCursor: null });
  });

  it('answers 404 event_not_found for an id not in the key\'s project, 400 for a bad query, 401 without a key', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const { id } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const other = await hookline.api('POST', '/admin/v1/projects', { body: { name: 'other' }, key: ADMIN_KEY });

    expect(await hookline.api('GET', `/v1/events/${id}`, { key: other.body.apiKey })).toMatchObject({ status: 404, body: { error: { code: 'event_not_found' } } });
    expect(await hookline.api('GET', '/v1/events/evt_nosuch')).toMatchObject({ status: 404, body: { error: { code: 'event_not_found' } } });
    expect((await hookline.api('GET', '/v1/events', { key: other.body.apiKey })).body).toEqual({ data: [], nextCursor: null });
    for (const query of ['limit=0', 'limit=251', 'cursor=dlv_01', 'eventType=order.created', 'status=pending']) {
      expect(await hookline.api('GET', `/v1/events?${query}`), query).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } });
    }
    expect(await hookline.api('GET', '/v1/events', { key: null })).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
  });
});
