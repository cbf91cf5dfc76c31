/**
 * Standard Webhooks signing: round trip, single-edit tampering and candidate lists, under both HMAC
 * backends. Tolerance and bad input: signing-tolerance.test.ts; other implementations:
 * signing-interop.test.ts. Every property is seeded (signing-helpers.ts) and the clock is injected.
 */
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/signing/index.js';
import type { Delivery } from './signing-helpers.js';
import {
  SETUPS,
  b64,
  bodyBytes,
  bytes32,
  deliveryArb,
  inputFor,
  replaceChar,
  secretArb,
  seeded,
  sign,
  skewMsArb,
  tamperBody,
  tamperSignatureBit,
  tamperSignatureChar,
  viewOf,
} from './signing-helpers.js';

type Tampering = (delivery: Delivery, header: string, index: number, pick: number) => Record<string, unknown>;

/** One edit each; the verifier's clock stays at the signed second, so only the signature can fail. */
const TAMPERINGS: ReadonlyArray<[string, Tampering]> = [
  ['one byte (or character) of the body', (d, _h, index, pick) => ({ body: tamperBody(d.body, index, pick) })],
  ['one character of the id', (d, _h, index, pick) => ({ id: replaceChar(d.id, index, pick) })],
  [
    'the timestamp (by 1 to 299 s, still inside the tolerance)',
    (d, _h, index, pick) => {
      const delta = (pick % 299) + 1;
      const seconds = index % 2 === 0 || d.seconds < delta ? d.seconds + delta : d.seconds - delta;
      return { timestamp: d.timestampForm === 'number' ? seconds : String(seconds) };
    },
  ],
  ['one base64 character of the signature', (_d, header, index, pick) => ({ signature: tamperSignatureChar(header, index, pick) })],
  ['one bit of the signature', (_d, header, index) => ({ signature: tamperSignatureBit(header, index % 256) })],
  ['the version prefix (v2)', (_d, header) => ({ signature: header.replace(/^v1,/, 'v2,') })],
];

describe.each(SETUPS)('round trip — $name', (setup) => {
  it('verifies what signWebhook signs, for every id, timestamp form, body form and secret', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, skewMsArb, async (delivery, skewMs) => {
        const header = await sign(setup, delivery);
        expect(header).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
        const verify = setup.verifier(() => delivery.seconds * 1000 + skewMs);
        expect(await verify(inputFor(delivery, header))).toBe(true);
      }),
      seeded(200),
    );
  });

  it('accepts the same body bytes as a string, a Buffer, a Uint8Array or a view into a larger buffer', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, async (delivery) => {
        const header = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        const bytes = bodyBytes(delivery.body.value);
        for (const body of [Buffer.from(bytes), new Uint8Array(bytes), viewOf(bytes, 3, 11)]) {
          expect(await verify(inputFor(delivery, header, { body }))).toBe(true);
        }
        if (typeof delivery.body.value === 'string') return;
        const text = new TextDecoder().decode(bytes);
        // A byte body is the same string body only when it is well-formed UTF-8.
        expect(await verify(inputFor(delivery, header, { body: text }))).toBe(Buffer.from(text).equals(bytes));
      }),
      seeded(150),
    );
  });

  it('keeps one verifier correct across a stream of deliveries under changing, repeated and broken secrets', async () => {
    const secretsArb = fc.array(secretArb, { minLength: 1, maxLength: 3 });
    const stepArb = fc.record({ delivery: deliveryArb, which: fc.nat(), signedWith: fc.nat(), broken: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(secretsArb, fc.array(stepArb, { minLength: 1, maxLength: 12 }), async (secrets, steps) => {
        let clock = 0;
        const verify = setup.verifier(() => clock);
        for (const { delivery, which, signedWith, broken } of steps) {
          const secret = secrets[which % secrets.length]!;
          const signer = secrets[signedWith % secrets.length]!;
          const header = await sign(setup, delivery, signer);
          clock = delivery.seconds * 1000;
          const used = broken ? `${secret}!` : secret;
          expect(await verify(inputFor(delivery, header, { secret: used }))).toBe(!broken && secret === signer);
        }
      }),
      seeded(100),
    );
  });

  it.each(TAMPERINGS)('rejects the delivery once %s changes', async (_name, tamper) => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, fc.nat(), fc.integer({ min: 1, max: 255 }), async (delivery, index, pick) => {
        fc.pre(bodyBytes(delivery.body.value).length > 0);
        const header = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        expect(await verify(inputFor(delivery, header))).toBe(true);
        expect(await verify(inputFor(delivery, header, tamper(delivery, header, index, pick)))).toBe(false);
      }),
      seeded(150),
    );
  });

  it('rejects every other spelling of the last base64 character (atob would ignore its two low bits)', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, async (delivery) => {
        const header = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        const last = 'v1,'.length + 42;
        for (const char of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') {
          if (char === header[last]) continue;
          const signature = header.slice(0, last) + char + header.slice(last + 1);
          expect(await verify(inputFor(delivery, header, { signature }))).toBe(false);
        }
      }),
      seeded(20),
    );
  });
});

/** Candidates that must never match: right HMAC under the wrong version, wrong HMACs, garbage. */
const wrongCandidateArb: fc.Arbitrary<(right: string) => string> = fc.oneof(
  bytes32.map((bytes) => () => `v1,${b64(bytes)}`),
  fc.constant((right: string) => right.replace(/^v1,/, 'v2,')),
  fc.constant((right: string) => right.replace(/^v1,/, 'V1,')),
  fc.constant((right: string) => right.slice('v1,'.length)),
  fc.constant((right: string) => `${right}=`),
  fc.base64String({ maxLength: 64 }).map((text) => () => `v1,${text}`),
  fc.string({ maxLength: 60 }).map((text) => () => `v1,${text}`),
  fc.string({ maxLength: 60 }).map((text) => () => text),
);

describe.each(SETUPS)('candidate lists — $name', (setup) => {
  it('accepts when the right candidate sits anywhere among wrong ones', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, fc.array(wrongCandidateArb, { maxLength: 8 }), fc.nat(), async (delivery, wrong, position) => {
        const right = await sign(setup, delivery);
        const candidates = wrong.map((make) => make(right));
        candidates.splice(position % (candidates.length + 1), 0, right);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        expect(await verify(inputFor(delivery, candidates.join(' ')))).toBe(true);
      }),
      seeded(150),
    );
  });

  it('rejects when no candidate matches', async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, fc.array(wrongCandidateArb, { maxLength: 8 }), async (delivery, wrong) => {
        const right = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        expect(await verify(inputFor(delivery, wrong.map((make) => make(right)).join(' ')))).toBe(false);
      }),
      seeded(150),
    );
  });

  it('signs one candidate per secret, in order, each verifying under its own secret only', async () => {
    const secretsArb = fc.array(bytes32.map((bytes) => `whsec_${b64(bytes)}`), { minLength: 1, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(deliveryArb, secretsArb, bytes32, async (delivery, secrets, otherKey) => {
        const other = `whsec_${b64(otherKey)}`;
        fc.pre(!secrets.includes(other));
        const header = await sign(setup, delivery, secrets);
        const candidates = header.split(' ');
        expect(candidates).toHaveLength(secrets.length);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        for (const [i, secret] of secrets.entries()) {
          expect(candidates[i]).toBe(await sign(setup, delivery, secret));
          expect(await verify(inputFor(delivery, header, { secret }))).toBe(true);
        }
        expect(await verify(inputFor(delivery, header, { secret: other }))).toBe(false);
      }),
      seeded(100),
    );
  });

  it('refuses to sign with no secret or a malformed one', async () => {
    const body = { form: 'string', value: '{}' } as const;
    const delivery: Delivery = { id: 'msg_1', seconds: 1_700_000_000, timestampForm: 'number', body, secret: '' };
    for (const secrets of [[], 'not-a-secret', 'whsec_', 'whsec_***', ['whsec_AAAA', 'whsec_x']]) {
      await expect(sign(setup, delivery, secrets as string[])).rejects.toThrow(TypeError);
    }
  });
});

describe.each(SETUPS)('the secret option — $name', (setup) => {
  const body = { form: 'string', value: '{"type":"service.trigger.event"}' } as const;
  const delivery: Delivery = { id: 'msg_opt', seconds: 1_700_000_000, timestampForm: 'string', body, secret: `whsec_${b64(new Uint8Array(32).fill(7))}` };
  const at = () => delivery.seconds * 1000;

  it('signWebhook and verifyWebhookSignature both take `secret`, one or several; the old `secrets` still signs', async () => {
    const other = `whsec_${b64(new Uint8Array(32).fill(9))}`;
    const fields = { id: delivery.id, timestamp: delivery.seconds, body: body.value };
    const header = await signWebhook({ ...fields, secret: delivery.secret }, setup.backend);
    expect(await signWebhook({ ...fields, secrets: delivery.secret }, setup.backend)).toBe(header);
    expect(await signWebhook({ ...fields, secret: [other, delivery.secret] }, setup.backend)).toBe(`${await sign(setup, delivery, other)} ${header}`);
    const verify = setup.verifier(at);
    expect(await verify(inputFor(delivery, header, { secret: delivery.secret }))).toBe(true);
    expect(await verify(inputFor(delivery, header, { secret: [other, delivery.secret] }))).toBe(true);
    expect(await verify(inputFor(delivery, header, { secret: [other] }))).toBe(false);
    // A list with a malformed secret in it, or none at all, fails closed.
    expect(await verify(inputFor(delivery, header, { secret: [delivery.secret, 'whsec_***'] }))).toBe(false);
    expect(await verify(inputFor(delivery, header, { secret: [] }))).toBe(false);
    await expect(signWebhook({ ...fields } as never, setup.backend)).rejects.toThrow(/pass the endpoint's secret as `secret`/);
  });

  it('ignores whitespace at the end of a secret (a newline read from a file), and nowhere else', async () => {
    const header = await sign(setup, delivery);
    const verify = setup.verifier(at);
    const unprefixed = delivery.secret.slice('whsec_'.length);
    for (const secret of [`${delivery.secret}\n`, `${delivery.secret}\r\n`, `${delivery.secret} \t\n`, `${unprefixed}\n`, `${unprefixed.replace(/=+$/, '')}\n`]) {
      expect(await verify(inputFor(delivery, header, { secret }))).toBe(true);
      expect(await sign(setup, delivery, `${delivery.secret}\n`)).toBe(header);
    }
    for (const secret of [` ${delivery.secret}`, `${delivery.secret.slice(0, 20)} ${delivery.secret.slice(20)}`, `${delivery.secret}\nx`, `${delivery.secret}.`]) {
      expect(await verify(inputFor(delivery, header, { secret }))).toBe(false);
    }
    await expect(sign(setup, delivery, 'whsec_\n')).rejects.toThrow(TypeError);
  });
});

describe.each(SETUPS)('headers as frameworks give them — $name', (setup) => {
  it("takes Node's string | string[] | undefined and Fetch's string | null: arrays of one value, signature arrays as one list", async () => {
    await fc.assert(
      fc.asyncProperty(deliveryArb, wrongCandidateArb, async (delivery, wrong) => {
        const right = await sign(setup, delivery);
        const verify = setup.verifier(() => delivery.seconds * 1000);
        const timestamp = String(delivery.seconds);
        // node:http's req.headersDistinct, or a framework that keeps repeated headers apart.
        expect(await verify(inputFor(delivery, right, { id: [delivery.id], timestamp: [timestamp], signature: [wrong(right), right] }))).toBe(true);
        expect(await verify(inputFor(delivery, right, { signature: [wrong(right)] }))).toBe(false);
        // Two different ids or timestamps: which one was signed is not for the verifier to guess.
        expect(await verify(inputFor(delivery, right, { id: [delivery.id, `${delivery.id}x`] }))).toBe(false);
        expect(await verify(inputFor(delivery, right, { timestamp: [timestamp, timestamp] }))).toBe(false);
        // Missing headers: Headers.get() answers null, IncomingHttpHeaders undefined.
        for (const missing of [null, undefined, []]) {
          for (const field of ['id', 'timestamp', 'signature']) expect(await verify(inputFor(delivery, right, { [field]: missing }))).toBe(false);
        }
      }),
      seeded(60),
    );
  });
});
