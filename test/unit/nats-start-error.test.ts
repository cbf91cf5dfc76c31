import { describe, expect, it } from 'vitest';
import { maskedNatsUrl } from '../../src/transport/nats-access.js';
import { natsStartError } from '../../src/transport/nats-start-error.js';

describe('NATS start failures', () => {
  it('mask a password, or a lone token, in HOOKLINE_NATS_URL', () => {
    expect(maskedNatsUrl('nats://app:s3cret@127.0.0.1:4222')).toBe('nats://app:***@127.0.0.1:4222');
    expect(maskedNatsUrl('nats://t0ken@127.0.0.1:4222')).toBe('nats://***@127.0.0.1:4222');
    expect(maskedNatsUrl('nats://a:b@h1:4222,nats://h2:4222')).toBe('nats://a:***@h1:4222,nats://h2:4222');
    expect(maskedNatsUrl('127.0.0.1:4222')).toBe('127.0.0.1:4222');
  });

  it('say what to check for a server without JetStream', () => {
    const error = natsStartError('nats://127.0.0.1:4222', new Error('jetstream is not enabled'));
    expect(error.code).toBe('HOOKLINE_ERR_NATS_UNAVAILABLE');
    expect(error.message).toBe('HOOKLINE_NATS_URL=nats://127.0.0.1:4222: the server runs without JetStream; start it with -js (nats-server -js), or unset HOOKLINE_NATS_URL to run without NATS');
  });
});
