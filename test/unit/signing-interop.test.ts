/**
 * Hookline's signatures against the public `standardwebhooks` package (which every receiver may use)
 * and the two HMAC backends against each other. `standardwebhooks` reads the real clock, so the
 * timestamps here are the real now give or take 240 s (60 s of margin below the 300 s tolerance).
 * Note: its `new Webhook(secret)` strips an optional `whsec_` itself, so both spellings are checked.
 */
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { nodeHmacBackend } from '../../src/signing/node-hmac.js';
import { signWebhook, verifyWebhookSignature, webCryptoHmacBackend } from '../../src/signing/index.js';
import { SETUPS, bodyArb, idArb, secretArb, seeded, tamperSignatureChar } from './signing-helpers.js';

/** standardwebhooks signs `payload.toString()` of a Buffer, so its bodies must be well-formed UTF-8. */
const textBodyArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.json(),
  fc.string({ unit: 'grapheme', maxLength: 100 }).map((text) => Buffer.from(text)),
);

const nearNowArb = fc.integer({ min: -240, max: 240 }).map((offset) => Math.floor(Date.now() / 1000) + offset);

/** Whether standardwebhooks accepts the delivery (it throws on failure; no JSON parsing here). */
function standardAccepts(secret: string, id: string, seconds: number, signature: string, body: string | Buffer): boolean {
  try {
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
    new Webhook(secret).verify(body, headers, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
}

describe.each(SETUPS)('standardwebhooks interop — $name', (setup) => {
  const verify = setup.verifier(Date.now);

  it('standardwebhooks verifies what signWebhook signs (secret with or without whsec_)', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, nearNowArb, textBodyArb, secretArb, async (id, seconds, body, secret) => {
        const signature = await signWebhook({ id, timestamp: seconds, body, secrets: secret }, setup.backend);
        expect(standardAccepts(secret, id, seconds, signature, body)).toBe(true);
        expect(standardAccepts(secret.slice('whsec_'.length), id, seconds, signature, body)).toBe(true);
      }),
      seeded(150),
    );
  });

  it('our verifier accepts what Webhook.sign produces, as a string, number, Buffer or Uint8Array', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, nearNowArb, textBodyArb, secretArb, async (id, seconds, body, secret) => {
        const signature = new Webhook(secret).sign(id, new Date(seconds * 1000), body);
        for (const timestamp of [String(seconds), seconds]) {
          expect(await verify({ id, timestamp, signature, body, secret })).toBe(true);
        }
        const bytes = typeof body === 'string' ? Buffer.from(body) : body;
        expect(await verify({ id, timestamp: seconds, signature, body: new Uint8Array(bytes), secret })).toBe(true);
      }),
      seeded(150),
    );
  });

  it('agrees with standardwebhooks on every one-character change of the signature (both reject)', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, nearNowArb, textBodyArb, secretArb, fc.nat(), fc.nat(), async (id, seconds, body, secret, index, pick) => {
        const signature = await signWebhook({ id, timestamp: seconds, body, secrets: secret }, setup.backend);
        const tampered = tamperSignatureChar(signature, index, pick);
        expect(standardAccepts(secret, id, seconds, tampered, body)).toBe(false);
        expect(await verify({ id, timestamp: seconds, signature: tampered, body, secret })).toBe(false);
      }),
      seeded(150),
    );
  });

  it('accepts a candidate list from standardwebhooks signers during rotation', async () => {
    const rotationArb = fc.array(secretArb, { minLength: 2, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(idArb, nearNowArb, textBodyArb, rotationArb, fc.nat(), async (id, seconds, body, secrets, which) => {
        const signature = secrets.map((secret) => new Webhook(secret).sign(id, new Date(seconds * 1000), body)).join(' ');
        const secret = secrets[which % secrets.length]!;
        expect(await verify({ id, timestamp: seconds, signature, body, secret })).toBe(true);
      }),
      seeded(100),
    );
  });
});

describe('verifyWebhookSignature (the exported default verifier, real clock)', () => {
  it('is the same function the suites above build with the default backend: round trip near now', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, nearNowArb, bodyArb, secretArb, async (id, seconds, body, secret) => {
        const signature = await signWebhook({ id, timestamp: seconds, body: body.value, secrets: secret });
        expect(await verifyWebhookSignature({ id, timestamp: seconds, signature, body: body.value, secret })).toBe(true);
        expect(await verifyWebhookSignature({ id, timestamp: seconds - 3_600, signature, body: body.value, secret })).toBe(false);
      }),
      seeded(100),
    );
  });

  it('resolves false for junk and for a delivery an hour old', async () => {
    await expect(verifyWebhookSignature(null as never)).resolves.toBe(false);
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const stale = Math.floor(Date.now() / 1000) - 3_600;
    const signature = new Webhook(secret).sign('msg_old', new Date(stale * 1000), '{}');
    await expect(verifyWebhookSignature({ id: 'msg_old', timestamp: stale, signature, body: '{}', secret })).resolves.toBe(false);
  });
});

describe('node:crypto and WebCrypto backends', () => {
  it('produce the same header for every input, one or several secrets', async () => {
    const secondsArb = fc.integer({ min: 0, max: 99_999_999_999 });
    await fc.assert(
      fc.asyncProperty(idArb, secondsArb, bodyArb, fc.array(secretArb, { minLength: 1, maxLength: 3 }), async (id, seconds, body, secrets) => {
        const input = { id, timestamp: seconds, body: body.value, secrets };
        expect(await signWebhook(input, webCryptoHmacBackend)).toBe(await signWebhook(input, nodeHmacBackend));
      }),
      seeded(150),
    );
  });
});
