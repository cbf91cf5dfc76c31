import { describe, expect, it } from 'vitest';
import { TurnWrites } from '../../src/store/turn-writes.js';

describe('TurnWrites', () => {
  it('issues the writes of one turn together, once, in order, and the next turn apart', async () => {
    const order: string[] = [];
    const issues: number[] = [];
    const turns = new TurnWrites((writeAll) => {
      const before = order.length;
      writeAll();
      issues.push(order.length - before);
      return issues.length;
    });
    const first = [turns.add(() => order.push('a')), turns.add(() => order.push('b')), turns.add(() => order.push('c'))];
    expect(order).toEqual([]);
    expect(await Promise.all(first)).toEqual([1, 1, 1]);
    expect(await turns.add(() => order.push('d'))).toBe(2);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(issues).toEqual([3, 1]);
  });

  it('fails a write that throws alone; the others of its turn are issued', async () => {
    const written: string[] = [];
    const turns = new TurnWrites((writeAll) => {
      writeAll();
      return 'issued';
    });
    const results = await Promise.allSettled([
      turns.add(() => written.push('a')),
      turns.add(() => {
        throw new Error('cannot encode');
      }),
      turns.add(() => written.push('c')),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'cannot encode' });
    expect(written).toEqual(['a', 'c']);
  });

  it('rejects every write of the turn when issuing fails, and issues the next turn', async () => {
    let fail = true;
    const turns = new TurnWrites((writeAll) => {
      if (fail) throw new Error('store closed');
      writeAll();
      return 'issued';
    });
    const results = await Promise.allSettled([turns.add(() => {}), turns.add(() => {})]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(turns.add(() => {})).resolves.toBe('issued');
  });
});
