import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALL_TYPES, startTestHookline, type TestHookline } from '../helpers/hookline.js';

/**
 * Batch de-duplication, as a property: any sequence of batches, with ids and bodies repeated within
 * and across batches, gets for every event the answer that sending the same events one by one gets
 * (202 stored, 200 repeat with the first answer, 409 conflict), on two nodes side by side.
 */

type Item = { status: number; id?: string; deliveryId?: string | null; error?: { code: string } };

/** What must agree between the nodes: status, error code, the id when it was given, and that a repeat carries the first answer. */
function outcomes(items: Item[], sent: Array<{ id?: string }>, firstAnswers: Map<string, Item>): unknown[] {
  return items.map((item, index) => {
    if (item.error) return { status: item.status, code: item.error.code };
    const given = sent[index]!.id;
    expect(item.deliveryId).toMatch(/^dlv_/);
    if (given === undefined) return { status: item.status, id: 'generated' };
    const first = firstAnswers.get(given);
    if (item.status === 202) firstAnswers.set(given, item);
    else expect(item.deliveryId).toBe(first?.deliveryId);
    return { status: item.status, id: given };
  });
}

async function pausedNode(): Promise<TestHookline> {
  const hookline = await startTestHookline();
  await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
  return hookline;
}

describe('batch de-duplication (property)', () => {
  it('any sequence of batches gives each event the answer sending them one by one gives', async () => {
    const batched = await pausedNode();
    const oneByOne = await pausedNode();
    let run = 0;
    // An event: one of three ids (or none) and one of two bodies, so repeats and conflicts are common.
    const anEvent = fc.record({ id: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }), body: fc.integer({ min: 0, max: 1 }) });
    const batches = fc.array(fc.array(anEvent, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 });

    await fc.assert(
      fc.asyncProperty(batches, async (shape) => {
        run++;
        const sent = shape.map((batch) =>
          batch.map(({ id, body }) => ({ ...(id === undefined ? {} : { id: `evt_r${run}_${id}` }), type: 'service.trigger.event', data: { body } })),
        );

        const batchItems: Item[] = [];
        for (const events of sent) {
          const answer = await batched.api('POST', '/v1/events/batch', { body: { events } });
          expect([202, 207]).toContain(answer.status);
          expect(answer.status === 202).toBe((answer.body.data as Item[]).every((item) => item.status < 300));
          batchItems.push(...(answer.body.data as Item[]));
        }
        const singleItems: Item[] = [];
        for (const event of sent.flat()) {
          const answer = await oneByOne.api('POST', '/v1/events', { body: event });
          singleItems.push({ status: answer.status, ...answer.body });
        }

        const flat = sent.flat();
        expect(outcomes(batchItems, flat, new Map())).toEqual(outcomes(singleItems, flat, new Map()));
      }),
      { seed: 1212, numRuns: 80 },
    );
  }, 60_000);
});
