import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SVIX_RETRY_SCHEDULE_MS, formatDuration, formatRetrySchedule, parseByteSize, parseDuration, parseRetrySchedule } from '../../src/config/duration.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['250', 250],
    ['250ms', 250],
    ['5s', 5_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    [' 15S ', 15_000],
  ])('%j is %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each(['', 'ms', '-5s', '1.5s', '5 s', '5x', '5sec', '1e3', 'Infinity', '9999999999999999d'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(TypeError);
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });
});

describe('parseRetrySchedule', () => {
  it('parses the documented default into the Svix schedule', () => {
    expect(parseRetrySchedule('0,5s,5m,30m,2h,5h,10h,10h')).toEqual([...SVIX_RETRY_SCHEDULE_MS]);
  });

  it('accepts spaces and millisecond schedules for tests', () => {
    expect(parseRetrySchedule('0, 10ms, 20')).toEqual([0, 10, 20]);
  });

  it.each(['', '  ', '0,,5s', '0,5s,', '0,5x'])('rejects %j and names the entry', (text) => {
    expect(() => parseRetrySchedule(text)).toThrow(TypeError);
  });

  it('says which entry is wrong', () => {
    expect(() => parseRetrySchedule('0,5s,oops')).toThrow(/entry 3/);
  });
});

describe('formatRetrySchedule', () => {
  it.each([
    [[0], '0'],
    [[1, 999, 1_000, 90_000, 3_600_000, 86_400_000], '1ms,999ms,1s,90s,1h,1d'],
    [[...SVIX_RETRY_SCHEDULE_MS], '0,5s,5m,30m,2h,5h,10h,10h'],
  ])('%j is %j', (schedule, text) => {
    expect(formatRetrySchedule(schedule)).toBe(text);
  });

  it('parseRetrySchedule reads back every schedule it writes, and the text it reads writes back alike', () => {
    // Delays in whole units of each size, so that every unit is written, up to the largest safe duration.
    const delay = fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      fc.constantFrom(1, 1_000, 60_000, 3_600_000, 86_400_000).chain((unit) => fc.integer({ min: 1, max: Math.floor(Number.MAX_SAFE_INTEGER / unit) }).map((n) => n * unit)),
    );
    fc.assert(
      fc.property(fc.array(delay, { minLength: 1, maxLength: 60 }), (schedule) => {
        const text = formatRetrySchedule(schedule);
        expect(parseRetrySchedule(text)).toEqual(schedule);
        expect(formatRetrySchedule(parseRetrySchedule(text.toUpperCase().replaceAll(',', ' , ')))).toBe(text);
        for (const ms of schedule) expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
      { seed: 3804, numRuns: 500 },
    );
  });
});

describe('parseByteSize', () => {
  it.each([
    ['262144', 262_144],
    ['256kb', 262_144],
    ['256KB', 262_144],
    ['1mb', 1_048_576],
    ['1m', 1_048_576],
    ['10b', 10],
    ['1gb', 1_073_741_824],
  ])('%j is %d bytes', (text, expected) => {
    expect(parseByteSize(text)).toBe(expected);
  });

  it.each(['', 'kb', '-1kb', '1.5mb', '1tb', '10 kb', 'lots'])('rejects %j', (text) => {
    expect(() => parseByteSize(text)).toThrow(TypeError);
  });
});

describe('SVIX_RETRY_SCHEDULE_MS', () => {
  it('is frozen, so a caller cannot change the default for everyone', () => {
    expect(Object.isFrozen(SVIX_RETRY_SCHEDULE_MS)).toBe(true);
    expect(SVIX_RETRY_SCHEDULE_MS).toHaveLength(8);
  });
});
