import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RELEASE_POLICY, IdleMemoryRelease, compactingGc, initialReleaseState, nextRelease } from '../../src/idle-memory-release.js';
import type { MemoryReading, ReleaseState } from '../../src/idle-memory-release.js';
import { nativeHeapTrim } from '../../src/native-heap-trim.js';
import { ManualClock } from '../helpers/manual-clock.js';

const MB = 1024 * 1024;
const policy = DEFAULT_RELEASE_POLICY;
const idle = (footprintMb: number): MemoryReading => ({ footprintBytes: footprintMb * MB, loopUtilization: 0.01 });
const busy = (footprintMb: number): MemoryReading => ({ footprintBytes: footprintMb * MB, loopUtilization: 0.6 });

function releasesOver(readings: MemoryReading[]): number[] {
  let state: ReleaseState = initialReleaseState(readings[0]!);
  const at: number[] = [];
  readings.forEach((reading, index) => {
    const next = nextRelease(state, reading, policy);
    state = next.state;
    if (next.release) {
      at.push(index);
      state = { ...state, floorBytes: reading.footprintBytes };
    }
  });
  return at;
}

describe('nextRelease', () => {
  it('releases once the loop has been idle for the set readings after the footprint grew', () => {
    const burst = [idle(40), busy(80), busy(150), busy(190), idle(190), idle(190), idle(190), idle(190), idle(190), idle(190)];
    expect(releasesOver(burst)).toEqual([7]);
  });

  it('never releases while the loop is busy, however much the footprint grew', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 10, max: 2_000 }), { minLength: 1, maxLength: 200 }), (footprints) => {
        expect(releasesOver(footprints.map(busy))).toEqual([]);
      }),
      { seed: 20261123, numRuns: 200 },
    );
  });

  it('an idle spell broken by one busy reading starts counting again', () => {
    const readings = [idle(40), busy(200), idle(200), idle(200), idle(200), busy(200), idle(200), idle(200), idle(200), idle(200)];
    expect(releasesOver(readings)).toEqual([9]);
  });

  it('does not release again without new growth, and does after it', () => {
    const afterRelease = Array.from({ length: 40 }, () => idle(190));
    const grownAgain = [busy(240), ...Array.from({ length: 4 }, () => idle(240))];
    const readings = [idle(40), busy(190), ...afterRelease, ...grownAgain];
    expect(releasesOver(readings)).toEqual([5, 46]);
  });

  it('measures growth from the lowest footprint, so a shrink and a regrowth of less than the threshold does not count', () => {
    const readings = [idle(100), busy(70), busy(100), ...Array.from({ length: 10 }, () => idle(100))];
    expect(releasesOver(readings)).toEqual([]);
  });
});

describe('IdleMemoryRelease', () => {
  it('reads on its timer and collects, then trims, when the readings call for it, reporting what it gave back', () => {
    const clock = new ManualClock();
    const readings = [idle(40), busy(190), idle(190), idle(190), idle(190), idle(190), idle(95), idle(95)];
    let collected = 0;
    const trimmedAfter: number[] = [];
    const reports: Array<{ beforeBytes: number; afterBytes: number }> = [];
    const release = new IdleMemoryRelease({
      clock,
      read: () => readings.shift() ?? idle(95),
      collect: () => collected++,
      trimNative: () => (trimmedAfter.push(collected), true),
      onRelease: (report) => reports.push(report),
    }).start();
    clock.advance(250 * 4);
    expect(collected).toBe(0);
    clock.advance(250);
    expect(collected).toBe(1);
    // The trim comes after the GC, which frees the native buffers that dead objects held.
    expect(trimmedAfter).toEqual([1]);
    expect(reports).toEqual([expect.objectContaining({ beforeBytes: 190 * MB, afterBytes: 95 * MB, nativeTrimmed: true })]);
    clock.advance(250 * 40);
    expect(collected).toBe(1);
    release.stop();
  });

  it('stops reading once stopped', () => {
    const clock = new ManualClock();
    let reads = 0;
    const release = new IdleMemoryRelease({ clock, read: () => (reads++, idle(40)), collect: () => {}, trimNative: () => false }).start();
    clock.advance(1_000);
    const before = reads;
    release.stop();
    clock.advance(10_000);
    expect(reads).toBe(before);
  });
});

describe('compactingGc', () => {
  it('gives back old space that a burst left sparse: the survivors are moved together', () => {
    const oldSpace = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!;
    // Survivors spread over old space among garbage, as a burst leaves them: objects promoted in
    // bulk, most of them dropped afterwards.
    let promoted: Array<{ id: number; text: string }> = [];
    for (let index = 0; index < 600_000; index++) promoted.push({ id: index, text: `delivery-${index}` });
    const collect = compactingGc();
    collect();
    const survivors = promoted.filter((_, index) => index % 50 === 0);
    promoted = [];
    collect();
    const after = oldSpace();
    expect(survivors).toHaveLength(12_000);
    // Without compaction the survivors would keep most pages: committed stays near what 600,000 took.
    expect(after.space_size).toBeLessThan(after.space_used_size * 2 + 8 * MB);
  });
});

describe('nativeHeapTrim', () => {
  const rssAnonMb = () => Number(/^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

  it.runIf(process.platform === 'linux')('gives back the pages of the native buffers a burst freed, which glibc keeps after the GC', () => {
    const collect = compactingGc();
    // A burst of native buffers, as msgpackr's and lmdb-js's write buffers are: 128 MB from malloc,
    // every page written, one buffer in 64 still in use afterwards, so that the freed ones lie between
    // live chunks, below the top of glibc's heap (the one part glibc shrinks by itself).
    let burst: Buffer[] = [];
    for (let index = 0; index < 16_384; index++) burst.push(Buffer.allocUnsafeSlow(8192).fill(index));
    const inUse = burst.filter((_, index) => index % 64 === 63);
    burst = [];
    collect();
    const afterGc = rssAnonMb();
    const trimmed = nativeHeapTrim()();
    const afterTrim = rssAnonMb();
    expect(inUse).toHaveLength(256);
    expect(trimmed).toBe(true);
    // Without the trim nothing comes back (the difference is about 0); with it, 80-120 MB on a quiet
    // machine, and 46 on a loaded CI one, where glibc had already given some back by itself.
    expect(afterGc - afterTrim).toBeGreaterThan(32);
  });
});
