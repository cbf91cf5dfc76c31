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

  it('tell an expired TLS certificate, the server\'s or the client\'s, from expired credentials', () => {
    // As Node's TLS socket reports a server certificate past its end date.
    const server = natsStartError({ natsUrl: 'tls://127.0.0.1:4222', natsTlsCa: '/etc/ca.pem' }, Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }));
    expect(server.message).toBe("HOOKLINE_NATS_URL=tls://127.0.0.1:4222: the server's TLS certificate is not valid now (certificate has expired); renew the server's certificate, or unset HOOKLINE_NATS_URL to run without NATS");
    // As OpenSSL reports the server's alert about an expired client certificate.
    const alert = Object.assign(new Error('C0A7B2F1:error:0A000415:SSL routines:ssl3_read_bytes:sslv3 alert certificate expired:../deps/openssl/ssl/record/rec_layer_s3.c:1605:SSL alert number 45'), { code: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED' });
    const client = natsStartError({ natsUrl: 'tls://127.0.0.1:4222', natsTlsCert: '/etc/client.pem', natsTlsKey: '/etc/client.key', natsToken: 't' }, alert);
    expect(client.details[0]?.path).toBe('HOOKLINE_NATS_TLS_CERT');
    expect(client.message).toContain('the server sent the TLS alert "certificate expired"');
    // NATS's own word for credentials past their time stays the credentials' problem.
    const credentials = natsStartError({ natsUrl: 'nats://127.0.0.1:4222', natsToken: 't' }, new Error("'User Authentication Expired'"));
    expect(credentials.details[0]?.path).toBe('HOOKLINE_NATS_URL');
    expect(credentials.message).toContain('its credentials expired');
  });

  it('read a JetStream API error, whose code is a number, without throwing (npm run nemesis, seed 11: "code.startsWith is not a function" stood in its place)', () => {
    const electing = Object.assign(new Error('JetStream system temporarily unavailable'), { name: 'JetStreamApiError', code: 10008 });
    const error = natsStartError('nats://127.0.0.1:4222', electing);
    expect(error.code).toBe('HOOKLINE_ERR_NATS_UNAVAILABLE');
    expect(error.cause).toBe(electing);
  });

  it('say that NATS is electing a leader, not that JetStream is off, when JetStream answers 10008 or a start step gave up waiting for it (finding 4)', () => {
    const electing = Object.assign(new Error('JetStream system temporarily unavailable'), { name: 'JetStreamApiError', code: 10008 });
    const error = natsStartError('nats://127.0.0.1:4222', electing);
    expect(error.message).toMatch(/^HOOKLINE_NATS_URL=nats:\/\/127\.0\.0\.1:4222: NATS is electing a leader \(a NATS server was lost or restarted\)/);
    expect(error.message).not.toMatch(/without JetStream/);
    // As `retrying` gives a step up: what it waited for, for how long, and what NATS last said.
    const gaveUp = new Error('watching the directory: still failing after 30 s (TIMEOUT)', { cause: Object.assign(new Error('TIMEOUT'), { code: 'TIMEOUT' }) });
    const waited = natsStartError('nats://127.0.0.1:4222', gaveUp);
    expect(waited.message).toContain('NATS is electing a leader');
    expect(waited.message).toContain('(watching the directory: still failing after 30 s (TIMEOUT))');
  });

  it('say that JetStream went unanswered, not that the server lacks it, when a step gave up on "jetstream is not enabled" from a server that greeted with JetStream', () => {
    const gaveUp = new Error('creating KV bucket HOOKLINE_EVENTS_leases: still failing after 30 s (jetstream is not enabled)', { cause: Object.assign(new Error('jetstream is not enabled'), { name: 'JetStreamNotEnabled' }) });
    const error = natsStartError('nats://127.0.0.1:4222', gaveUp);
    expect(error.message).toMatch(/^HOOKLINE_NATS_URL=nats:\/\/127\.0\.0\.1:4222: nothing answered the JetStream API for 30 s \(creating KV bucket/);
    expect(error.message).toContain('cut off from the other servers of its cluster');
    expect(error.message).not.toMatch(/runs without JetStream/);
  });
});
