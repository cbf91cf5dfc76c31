/**
 * The Standard Webhooks reference JavaScript library's test vectors (libraries/javascript in
 * github.com/standard-webhooks/standard-webhooks), each checked against verifyWebhookSignature. The
 * reference suite builds its secret without `whsec_`, so five of its valid cases used to resolve
 * `false` here for that reason alone; a receiver pasting a secret in either form must verify.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createWebhookVerifier, verifyWebhookSignature } from '../../src/sdk/index.js';

const SECRET = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const MSG_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const PAYLOAD = '{"test": 2432232314}';
const TOLERANCE = 5 * 60;

function signed(seconds: number, payload = PAYLOAD, secret = SECRET) {
  const signature = createHmac('sha256', Buffer.from(secret, 'base64')).update(`${MSG_ID}.${seconds}.${payload}`).digest('base64');
  return { id: MSG_ID, timestamp: String(seconds), signature: `v1,${signature}`, body: payload, secret };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('Standard Webhooks reference vectors', () => {
  it('the reference signing vector verifies at its own time, with the secret prefixed or not', async () => {
    const at = createWebhookVerifier({ now: () => 1614265330 * 1000 });
    const vector = { id: MSG_ID, timestamp: '1614265330', signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=', body: PAYLOAD };
    expect(await at({ ...vector, secret: `whsec_${SECRET}` })).toBe(true);
    expect(await at({ ...vector, secret: SECRET })).toBe(true);
  });

  it('a valid signature verifies with the unprefixed secret the reference suite uses', async () => {
    expect(await verifyWebhookSignature(signed(nowSeconds()))).toBe(true);
  });

  it('verification works with and without the whsec_ prefix', async () => {
    const input = signed(nowSeconds());
    expect(await verifyWebhookSignature(input)).toBe(true);
    expect(await verifyWebhookSignature({ ...input, secret: `whsec_${SECRET}` })).toBe(true);
  });

  it('a secret without its base64 padding verifies like the padded one', async () => {
    const key = Buffer.alloc(32, 9).toString('base64'); // 44 characters ending in "="
    const input = signed(nowSeconds(), PAYLOAD, key);
    expect(key.endsWith('=')).toBe(true);
    for (const secret of [key, key.replace(/=+$/, ''), `whsec_${key.replace(/=+$/, '')}`]) expect(await verifyWebhookSignature({ ...input, secret })).toBe(true);
  });

  it('several candidates, of two versions, the valid one third, verify', async () => {
    const input = signed(nowSeconds());
    const other = 'Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    expect(await verifyWebhookSignature({ ...input, signature: [`v1,${other}`, `v2,${other}`, input.signature, `v1,${other}`].join(' ') })).toBe(true);
  });

  it('an empty payload verifies', async () => {
    expect(await verifyWebhookSignature(signed(nowSeconds(), ''))).toBe(true);
  });

  it('missing headers, a bad timestamp, a bad or partial signature, and stale or early timestamps resolve false', async () => {
    const input = signed(nowSeconds());
    const rejected = [
      { ...input, id: undefined },
      { ...input, timestamp: undefined },
      { ...input, signature: undefined },
      { ...input, timestamp: 'hello' },
      { ...input, signature: 'v1,dawfeoifkpqwoekfpqoekf' },
      { ...input, signature: input.signature.slice(0, 8) },
      { ...input, signature: 'v1,' },
      signed(nowSeconds() - TOLERANCE - 1),
      signed(nowSeconds() + TOLERANCE + 1),
    ];
    for (const bad of rejected) expect(await verifyWebhookSignature(bad as never), JSON.stringify(bad)).toBe(false);
  });

  it('an empty key, or the prefix alone, never verifies', async () => {
    const input = signed(nowSeconds());
    for (const secret of ['', 'whsec_', undefined, null]) expect(await verifyWebhookSignature({ ...input, secret: secret as never })).toBe(false);
  });
});
