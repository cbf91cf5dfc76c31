import { describe, expect, it } from 'vitest';
import { WriteGroup } from '../../src/store/write-group.js';

describe('WriteGroup', () => {
  it('issues its writes once, together and in order, when closed', async () => {
    const written: string[] = [];
    const issues: number[] = [];
    const group = new WriteGroup((writeAll) => {
      const before = written.length;
      writeAll();
      issues.push(written.length - before);
      return 'issued';
    });
    const waits = [group.add(() => written.push('a')), group.add(() => written.push('b')), group.add(() => written.push('c'))];
    expect(written).toEqual([]);
    group.close();
    expect(await Promise.all(waits)).toEqual(['issued', 'issued', 'issued']);
    expect(written).toEqual(['a', 'b', 'c']);
    expect(issues).toEqual([3]);
  });

  it('fails a write that throws alone; the others are issued', async () => {
    const written: string[] = [];
    const group = new WriteGroup((writeAll) => {
      writeAll();
      return 'issued';
    });
    const waits = [
      group.add(() => written.push('a')),
      group.add(() => {
        throw new Error('cannot encode');
      }),
      group.add(() => written.push('c')),
    ];
    group.close();
    const results = await Promise.allSettled(waits);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'cannot encode' });
    expect(written).toEqual(['a', 'c']);
  });

  it('rejects every write when issuing fails', async () => {
    const group = new WriteGroup(() => {
      throw new Error('store closed');
    });
    const waits = [group.add(() => {}), group.add(() => {})];
    group.close();
    const results = await Promise.allSettled(waits);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
  });
});
