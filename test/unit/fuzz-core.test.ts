import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliveryTimeoutFlag } from '../../src/cli/args.js';
import { bodyPreview, judge, undecidedBy } from '../../src/fuzz/index.js';
import { splitsACharacter, splitsInsideCharacters } from '../../src/fuzz/text.js';
import { createPacer, latencyOf, seededRandom } from '../../src/replay/replay-run.js';

/** The plain parts of the receiver fuzzer and the replay driver: judging, previews, cuts, pacing. */

const SEED = 0x5eed;

describe('judging answers', () => {
  it('a repeated webhook-id must get a 2xx unless --expect-duplicate any, and says why', () => {
    const ok = { status: 204, error: null };
    const conflict = { status: 409, error: null };
    expect(judge('accept-repeat', [ok, conflict])).toMatch(/the repeated webhook-id got 409: .*timeout, 409, 409, 409 → dead_lettered/);
    expect(judge('accept-repeat', [ok, conflict], 'any')).toBeNull();
    expect(judge('accept-repeat', [ok, ok])).toBeNull();
    expect(judge('accept-concurrent', [ok, conflict, ok])).toMatch(/^1 of 3 concurrent copies of one delivery got 409/);
    expect(judge('accept-concurrent', [conflict, ok], 'any')).toBeNull();
    expect(judge('accept-concurrent', [conflict, conflict], 'any')).toMatch(/none of 2 concurrent copies got a 2xx/);
  });

  it('a forged request must be refused, twice, and must not block the genuine delivery with its id', () => {
    const answers = (...statuses: number[]) => statuses.map((status) => ({ status, error: null }));
    // forgery, forgery again, genuine, fresh control, repeated control
    expect(judge('accept-after-forgery', answers(400, 400, 204, 204, 200))).toBeNull();
    expect(judge('accept-after-forgery', answers(400, 409, 409, 204, 409))).toMatch(/got 409: the forgery blocked it/);
    expect(judge('accept-after-forgery', answers(200, 200, 200, 200, 200))).toBe('the forged request was accepted (200)');
    expect(judge('accept-after-forgery', answers(400, 200, 200, 204, 200))).toMatch(/^the forged request, sent again with the same webhook-id, was accepted \(200\)/);
    expect(judge('accept-after-forgery', answers(400, 400, 200, 204, 200))).toMatch(/got 200, the answer this receiver gives a repeat \(a fresh delivery gets 204\)/);
    expect(judge('accept-after-forgery', answers(400, 400, 204, 204, 204))).toBeNull();
    expect(undecidedBy('accept-after-forgery', answers(400, 400, 204, 204, 204))).toMatch(/^the receiver answers a fresh delivery and a repeat alike \(204\)/);
    expect(undecidedBy('accept-after-forgery', answers(400, 400, 204, 204, 200))).toBeNull();
  });

  it('id-squatting never passes on answers that cannot tell a squatted id from a new one (property)', () => {
    const status = fc.constantFrom(200, 201, 202, 204, 400, 401, 409, 500);
    fc.assert(
      fc.property(fc.array(status, { minLength: 5, maxLength: 5 }), (statuses) => {
        const outcomes = statuses.map((code) => ({ status: code, error: null }));
        const [, , genuine, fresh, repeat] = statuses;
        const passed = judge('accept-after-forgery', outcomes) === null && undecidedBy('accept-after-forgery', outcomes) === null;
        // A pass needs a repeat answered otherwise than a new delivery, and the genuine one answered as new is.
        if (passed) expect(genuine === fresh && fresh !== repeat && statuses.slice(0, 2).every((code) => code >= 300)).toBe(true);
      }),
      { seed: 39 },
    );
  });
});

describe('the --timeout of tools that send deliveries', () => {
  it('is by default what a real delivery waits: HOOKLINE_DELIVERY_TIMEOUT, else its 15 s default; --timeout overrides it', () => {
    expect(deliveryTimeoutFlag({}).parse(undefined)).toBe(15_000);
    expect(deliveryTimeoutFlag({ HOOKLINE_DELIVERY_TIMEOUT: '' }).parse(undefined)).toBe(15_000);
    expect(deliveryTimeoutFlag({ HOOKLINE_DELIVERY_TIMEOUT: '30s' }).parse(undefined)).toBe(30_000);
    expect(deliveryTimeoutFlag({ HOOKLINE_DELIVERY_TIMEOUT: '30s' }).parse('2s')).toBe(2_000);
    expect(deliveryTimeoutFlag({ HOOKLINE_DELIVERY_TIMEOUT: 'soon' }).parse('2s')).toBe(2_000);
    expect(deliveryTimeoutFlag({ HOOKLINE_DELIVERY_TIMEOUT: 'soon' }).safeParse(undefined).success).toBe(false);
  });
});

describe('body previews', () => {
  it('show a long run of one character as a count, never the run itself', () => {
    const preview = bodyPreview(new TextEncoder().encode(`{"padding":"${'x'.repeat(70_000)}"}`));
    expect(preview).toBe(JSON.stringify('{"padding":"x…(70000×)"}'));
    expect(bodyPreview(new TextEncoder().encode('中'.repeat(500))).length).toBeLessThan(260);
  });
});

describe('cuts inside characters', () => {
  it('every cut of a body of multi-byte characters falls inside one, and the pieces rejoin to the body', () => {
    fc.assert(
      fc.property(fc.constantFrom('é', '中', '😀', '\u2028'), fc.integer({ min: 4, max: 3000 }), fc.integer({ min: 2, max: 8 }), (char, repeats, pieces) => {
        const body = new TextEncoder().encode(`{"t":"${char.repeat(repeats)}"}`);
        const splits = splitsInsideCharacters(body, pieces);
        expect(splits).toEqual([...splits].sort((a, b) => a - b));
        expect(new Set(splits).size).toBe(splits.length);
        expect(splits.every((at) => at > 0 && at < body.length)).toBe(true);
        if (splits.length > 0) expect(splitsACharacter(body, splits)).toBe(true);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});

describe('replay pacing and figures', () => {
  it('spaces starts 1000/rate ms apart even when many senders ask at once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 2, max: 12 }), async (rate, callers) => {
        const clock = 1_000;
        const starts: number[] = [];
        const pace = createPacer(rate, () => clock, async (ms) => void starts.push(clock + ms));
        await Promise.all(Array.from({ length: callers }, async () => {
          const before = starts.length;
          await pace();
          if (starts.length === before) starts.push(clock); // it did not sleep: it starts now
        }));
        starts.sort((a, b) => a - b);
        for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(1000 / rate - 1e-9);
      }),
      { seed: SEED, numRuns: 100 },
    );
  });

  it('latency percentiles by nearest rank, and a seeded random that repeats', () => {
    expect(latencyOf([])).toBeNull();
    expect(latencyOf(Array.from({ length: 100 }, (_, i) => 100 - i))).toEqual({ p50: 50, p99: 99, max: 100 });
    const a = seededRandom(7);
    const b = seededRandom(7);
    const values = Array.from({ length: 50 }, () => a());
    expect(Array.from({ length: 50 }, () => b())).toEqual(values);
    expect(values.every((value) => value >= 0 && value < 1)).toBe(true);
    expect(seededRandom(8)()).not.toBe(values[0]);
  });
});
