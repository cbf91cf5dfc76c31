import fc from 'fast-check';
import { open } from 'lmdb';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openTable } from '../../src/store/tables.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * The tables keep their record shapes once (lmdb-js shared structures) instead of in every value.
 * Data directories written before hold values with their shapes inline: those must read as they
 * did, beside values written since, across reopenings.
 */

type Row = Record<string, unknown>;

/** Values shaped like the stored records: nested objects, nulls, numbers, strings, byte arrays. */
const rowArbitrary: fc.Arbitrary<Row> = fc.dictionary(
  fc.constantFrom('id', 'eventId', 'eventType', 'status', 'attempts', 'at', 'statusCode', 'error', 'envelope', 'answer', 'deliveryIds'),
  fc.oneof(
    fc.constant(null),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string(),
    fc.uint8Array({ maxLength: 64 }),
    fc.record({ id: fc.string(), deliveryId: fc.option(fc.string()) }),
    fc.array(fc.string(), { maxLength: 3 }),
  ),
);

/** Byte arrays as plain arrays: lmdb-js hands them back as Buffer or Uint8Array, and Hookline reads either. */
function withPlainBytes(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: [...value] };
  if (Array.isArray(value)) return value.map(withPlainBytes);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, withPlainBytes(member)]));
  return value;
}

function tempDir(): string {
  const dir = makeTempDir('hookline-tables-');
  onTestFinished(() => dir.remove());
  return dir.path;
}

describe('store tables', () => {
  it('write values without their field names in them', async () => {
    const path = tempDir();
    const root = open({ path, noSubdir: false });
    const table = openTable<Row, string[]>(root, 'deliveries');
    const head = { id: 'dlv_1', eventId: 'evt_1', eventType: 'service.trigger.event', status: 'succeeded', attempts: 1, nextAttemptAt: null };
    await table.put(['p', 'dlv_1'], head);
    // Read through a table opened as before (no shared structures): the raw value.
    const raw = root.openDB<Row, string[]>({ name: 'deliveries' }).getBinary(['p', 'dlv_1'])!;
    expect(Buffer.from(raw).includes('eventType')).toBe(false);
    expect(table.get(['p', 'dlv_1'])).toEqual(head);
    await root.close();
  });

  it('read the values an earlier version wrote, beside new ones, across reopenings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowArbitrary, { minLength: 1, maxLength: 20 }), fc.array(rowArbitrary, { minLength: 1, maxLength: 20 }), async (before, since) => {
        const path = tempDir();
        // As earlier versions wrote them: every value with its shape inline.
        const earlier = open({ path, noSubdir: false });
        const plain = earlier.openDB<Row, [string, number]>({ name: 'events' });
        await earlier.transaction(() => before.forEach((row, index) => plain.put(['before', index], row)));
        await earlier.close();

        for (let opening = 0; opening < 2; opening++) {
          const root = open({ path, noSubdir: false });
          const table = openTable<Row, [string, number]>(root, 'events');
          if (opening === 0) await root.transaction(() => since.forEach((row, index) => table.put(['since', index], row)));
          before.forEach((row, index) => expect(withPlainBytes(table.get(['before', index]))).toEqual(withPlainBytes(row)));
          since.forEach((row, index) => expect(withPlainBytes(table.get(['since', index]))).toEqual(withPlainBytes(row)));
          // The shapes' own key is never one of the table's entries.
          expect([...table.getKeys()]).toHaveLength(before.length + since.length);
          await root.close();
        }
      }),
      { seed: 1124, numRuns: 40 },
    );
  });
});
