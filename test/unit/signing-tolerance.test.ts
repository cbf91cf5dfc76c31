/**
 * The timestamp tolerance and the "never throws, fails closed" contract of the verifier, under both
 * HMAC backends, with an injected clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WebhookVerifier } from '../../src/signing/index.js';
import type { Delivery } from './signing-helpers.js';
import { SETUPS, b64, bodyBytes, deliveryArb, inputFor, junkArb, sameBytes, seeded, sign } from './signing-helpers.js';

/** Resolves, never rejects, never throws synchronously, and resolves to exactly `false`. */
async function expectFalse(verify: WebhookVerifier, input: unknown): Promise<void> {
  const result = verify(input as Parameters<WebhookVerifier>[0]);
  expect(result).toBeInstanceOf(Promise);
  await expect(result).resolves.toBe(false);
}

/** A delivery whose timestamp is at least `margin` seconds after the epoch, so `seconds - margin >= 0`. */
const deliveryAfter = (margin: number) => deliveryArb.map((d) => ({ ...d, seconds: d.seconds + margin }));

describe.each(SETUPS)('timestamp tolerance — $name', (setup) => {
  /** Verifies a delivery whose timestamp is `offset` seconds from the clock (positive: in the future). */
  async function verifyAt(delivery: Delivery, offset: number, toleranceSeconds?: number): Promise<boolean> {
    const header = await sign(setup, delivery);
    const verify = setup.verifier(() => (delivery.seconds - offset) * 1000);
    return verify(inputFor(delivery, header, toleranceSeconds === undefined ? {} : { toleranceSeconds }));
  }

  it('accepts exactly 300 s in the past or the future by default, and rejects 301 s', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryAfter(301), async (delivery) => {
        for (const offset of [-300, 300, 0]) expect(await verifyAt(delivery, offset)).toBe(true);
        for (const offset of [-301, 301]) expect(await verifyAt(delivery, offset)).toBe(false);
      }),
      seeded(100),
    );
  });

  it('treats a custom toleranceSeconds the same way, in both directions', async () => {
    const maxTolerance = 30 * 86_400;
    await fc.assert(
      fc.asyncProperty(deliveryAfter(maxTolerance + 1), fc.integer({ min: 0, max: maxTolerance }), async (delivery, tolerance) => {
        for (const offset of [-tolerance, tolerance]) expect(await verifyAt(delivery, offset, tolerance)).toBe(true);
        for (const offset of [-tolerance - 1, tolerance + 1]) expect(await verifyAt(delivery, offset, tolerance)).toBe(false);
      }),
      seeded(100),
    );
  });

  it('takes the clock in whole seconds, as the Standard Webhooks libraries do: exactly the tolerance away verifies through that second, one second more does not', async () => {
    const delivery: Delivery = {
      id: 'msg_ms',
      seconds: 1_700_000_000,
      timestampForm: 'string',
      body: { form: 'string', value: '{}' },
      secret: `whsec_${b64(new Uint8Array(32).fill(7))}`,
    };
    const header = await sign(setup, delivery);
    const at = (ms: number) => setup.verifier(() => ms)(inputFor(delivery, header));
    // 300 s old: the reference verifies it at any moment of that second (it floors the clock).
    expect(await at(1_700_000_300_000)).toBe(true);
    expect(await at(1_700_000_300_999)).toBe(true);
    expect(await at(1_700_000_301_000)).toBe(false);
    // 300 s ahead.
    expect(await at(1_699_999_700_000)).toBe(true);
    expect(await at(1_699_999_699_999)).toBe(false);
  });

  it('accepts the timestamp as a number or as a decimal string, whichever form was signed', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, async (delivery) => {
        const header = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        for (const timestamp of [delivery.seconds, String(delivery.seconds)]) {
          expect(await verify(inputFor(delivery, header, { timestamp }))).toBe(true);
        }
      }),
      seeded(100),
    );
  });
});

/** Whether `value` in `field` would still describe the signed delivery (then `true` is correct). */
function stillValid(delivery: Delivery, field: string, value: unknown): boolean {
  switch (field) {
    case 'signature':
      return false; // junk never spells a valid HMAC
    case 'timestamp':
      return value === delivery.seconds || value === String(delivery.seconds);
    case 'body':
      return (typeof value === 'string' || value instanceof Uint8Array) && sameBytes(bodyBytes(value), bodyBytes(delivery.body.value));
    case 'toleranceSeconds':
      return value === undefined || value === null || (typeof value === 'number' && value >= 0);
    default:
      return value === (delivery as unknown as Record<string, unknown>)[field];
  }
}

const FIELDS = ['id', 'timestamp', 'signature', 'body', 'secret', 'toleranceSeconds'] as const;

describe.each(SETUPS)('never throws, fails closed — $name', (setup) => {
  const verify = setup.verifier(() => 1_700_000_000_000);

  it('resolves false for junk in place of the whole input', async () => {
    await fc.assert(fc.asyncProperty(junkArb, (input) => expectFalse(verify, input)), seeded(300));
    for (const input of [undefined, null, 0, '', 'x', [], {}, () => true, Symbol('s'), 10n]) await expectFalse(verify, input);
  });

  it('resolves false for junk in every field', async () => {
    const fields = Object.fromEntries(FIELDS.map((field) => [field, junkArb])) as Record<(typeof FIELDS)[number], fc.Arbitrary<unknown>>;
    const junkInput = fc.record(fields, { requiredKeys: [] });
    await fc.assert(fc.asyncProperty(junkInput, (input) => expectFalse(verify, input)), seeded(300));
  });

  it('resolves false when one field of a valid delivery is replaced by junk', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, fc.constantFrom(...FIELDS), junkArb, async (delivery, field, junk) => {
        fc.pre(!stillValid(delivery, field, junk));
        const header = await sign(setup, delivery);
        const valid = setup.verifier(() => delivery.seconds * 1000);
        expect(await valid(inputFor(delivery, header))).toBe(true);
        await expectFalse(valid, inputFor(delivery, header, { [field]: junk }));
      }),
      seeded(300),
    );
  });

  const SECRET = `whsec_${b64(new Uint8Array(32).map((_, i) => i))}`;
  const VALID: Delivery = {
    id: 'msg_2fQ8',
    seconds: 1_700_000_000,
    timestampForm: 'string',
    body: { form: 'string', value: '{"type":"ping"}' },
    secret: SECRET,
  };
  const MALFORMED: ReadonlyArray<[string, (header: string) => Record<string, unknown>]> = [
    ['missing timestamp', () => ({ timestamp: undefined })],
    ['empty timestamp', () => ({ timestamp: '' })],
    ['non-numeric timestamp', () => ({ timestamp: 'yesterday' })],
    ['timestamp with a fraction', () => ({ timestamp: '1700000000.5' })],
    ['fractional number timestamp', () => ({ timestamp: 1_700_000_000.5 })],
    ['negative timestamp', () => ({ timestamp: -1_700_000_000 })],
    ['timestamp with spaces', () => ({ timestamp: ' 1700000000' })],
    ['timestamp in exponent form', () => ({ timestamp: '1.7e9' })],
    ['NaN timestamp', () => ({ timestamp: Number.NaN })],
    ['empty id', () => ({ id: '' })],
    ['empty signature header', () => ({ signature: '' })],
    ['garbage signature header', () => ({ signature: 'garbage, not a signature' })],
    ['v2, prefix on the right signature', (header) => ({ signature: header.replace('v1,', 'v2,') })],
    ['no version prefix', (header) => ({ signature: header.slice(3) })],
    ['bad base64 in the candidate', () => ({ signature: 'v1,!!!!not*base64!!!!' })],
    ['unpadded base64', (header) => ({ signature: header.slice(0, -1) })],
    ['base64 of 31 bytes', () => ({ signature: `v1,${b64(new Uint8Array(31))}` })],
    ['candidates separated by a comma', (header) => ({ signature: `v1,${b64(new Uint8Array(32))},${header}` })],
    ['secret whose base64 has an impossible length (4n+1)', () => ({ secret: `${SECRET.replace(/=+$/, '')}AA` })],
    ['secret with a space in it', () => ({ secret: `${SECRET.slice(0, 10)} ${SECRET.slice(10)}` })],
    ['secret with a base64url character', () => ({ secret: `${SECRET.slice(0, 12)}-${SECRET.slice(13)}` })],
    ['secret with bad base64', () => ({ secret: 'whsec_not base64!' })],
    ['secret that is only the prefix', () => ({ secret: 'whsec_' })],
    ['upper-case secret prefix', () => ({ secret: `WHSEC_${SECRET.slice(6)}` })],
    ['body as an ArrayBuffer', () => ({ body: new TextEncoder().encode('{"type":"ping"}').buffer })],
    ['body as a parsed object', () => ({ body: { type: 'ping' } })],
    ['negative tolerance', () => ({ toleranceSeconds: -1 })],
    ['NaN tolerance', () => ({ toleranceSeconds: Number.NaN })],
    ['tolerance as a string', () => ({ toleranceSeconds: '300' })],
  ];

  it.each(MALFORMED)('resolves false for %s', async (_name, override) => {
    const header = await sign(setup, VALID);
    const valid = setup.verifier(() => VALID.seconds * 1000);
    expect(await valid(inputFor(VALID, header))).toBe(true);
    await expectFalse(valid, inputFor(VALID, header, override(header)));
  });

  it('resolves false when the clock itself throws', async () => {
    const header = await sign(setup, VALID);
    const broken = setup.verifier(() => {
      throw new Error('clock failure');
    });
    await expectFalse(broken, inputFor(VALID, header));
  });
});
