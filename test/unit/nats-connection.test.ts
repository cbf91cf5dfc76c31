import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { settingsFromEnvironment } from '../../src/config/settings.js';
import { isHooklineError } from '../../src/errors.js';
import { maskedNatsUrl, natsAuthMode } from '../../src/transport/nats-access.js';
import type { NatsAccess } from '../../src/transport/nats-access.js';
import { natsConnectOptions } from '../../src/transport/nats-connection.js';
import { natsSchemeWarnings } from '../../src/transport/nats-seeds.js';
import { natsStartError } from '../../src/transport/nats-start-error.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const dir = makeTempDir('hookline-nats-options-');
afterAll(() => dir.remove());

function file(name: string, text: string): string {
  const path = join(dir.path, name);
  writeFileSync(path, text);
  return path;
}

/** The message of what `run` throws (a Hookline error), or a failure when it throws nothing. */
function thrown(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (!isHooklineError(error)) throw error;
    return { code: error.code, message: error.message };
  }
  throw new Error('nothing was thrown');
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function credsFile(name: string, claims: Record<string, unknown>, seed = new TextDecoder().decode(nkeys.createUser().getSeed())): string {
  const jwt = `${b64url({ typ: 'JWT', alg: 'ed25519-nkey' })}.${b64url(claims)}.c2lnbmF0dXJl`;
  return file(name, `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`);
}

describe('NATS connect options from the settings', () => {
  it('take credentials out of the seed URLs (nats.js would ignore them) and keep every seed', () => {
    const options = natsConnectOptions({ natsUrl: 'nats://app:s%40cret@127.0.0.1:4222, nats://127.0.0.1:4223' });
    expect(options.servers).toEqual(['nats://127.0.0.1:4222', 'nats://127.0.0.1:4223']);
    expect(options).toMatchObject({ user: 'app', pass: 's@cret' });
    expect(natsConnectOptions({ natsUrl: 'nats://t0ken@127.0.0.1:4222' })).toMatchObject({ token: 't0ken', servers: ['nats://127.0.0.1:4222'] });
    expect(natsConnectOptions({ natsUrl: 'nats://app:100%@127.0.0.1:4222' })).toMatchObject({ user: 'app', pass: '100%' });
    expect(natsConnectOptions({ natsUrl: 'nats://127.0.0.1:4222' })).not.toHaveProperty('tls');
  });

  it('require TLS for a tls:// seed or a CA, and pick one authentication mode', () => {
    expect(natsConnectOptions({ natsUrl: 'tls://127.0.0.1:4222' }).tls).toEqual({});
    expect(natsConnectOptions({ natsUrl: 'nats://h:1', natsUser: 'app', natsPassword: 'pw' })).toMatchObject({ user: 'app', pass: 'pw' });
    expect(natsConnectOptions({ natsUrl: 'nats://h:1', natsToken: 'tok' })).toMatchObject({ token: 'tok' });
    const seed = new TextDecoder().decode(nkeys.createUser().getSeed());
    expect(natsConnectOptions({ natsUrl: 'nats://h:1', natsNkeyFile: file('user.nk', `${seed}\n`) }).authenticator).toBeTypeOf('function');
    expect(natsConnectOptions({ natsUrl: 'nats://h:1', natsCredsFile: credsFile('ok.creds', { sub: 'U', exp: Math.floor(Date.now() / 1000) + 3600 }) }).authenticator).toBeTypeOf('function');
    expect(natsAuthMode({ natsUrl: 'nats://h:1' })).toBe('none');
  });

  it('name the setting of a file that cannot be used, before connecting', () => {
    const missing = join(dir.path, 'nope.pem');
    expect(thrown(() => natsConnectOptions({ natsUrl: 'tls://h:1', natsTlsCa: missing }))).toEqual({ code: 'HOOKLINE_ERR_CONFIG', message: `HOOKLINE_NATS_TLS_CA=${missing}: cannot be read (no such file); point it at a readable file` });
    mkdirSync(join(dir.path, 'a-dir'), { recursive: true });
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsCredsFile: join(dir.path, 'a-dir') })).message).toContain('HOOKLINE_NATS_CREDS=');
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsTlsCa: file('ca.txt', 'not pem') })).message).toMatch(/^HOOKLINE_NATS_TLS_CA=.*ca\.txt: is not a PEM file/);
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsNkeyFile: file('bad.nk', 'SUNOTASEED\n') })).message).toMatch(/^HOOKLINE_NATS_NKEY=.*bad\.nk: is not an nkey seed file \(the seed does not decode\)/);
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsNkeyFile: file('op.nk', 'SOABC\n') })).message).toContain('is not a user nkey seed (SU…)');
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsCredsFile: file('junk.creds', 'hello') })).message).toMatch(/^HOOKLINE_NATS_CREDS=.*junk\.creds: is not a valid creds file \(it needs a NATS USER JWT block and a USER NKEY SEED block\)/);
  });

  it('refuse an expired creds file with the time it expired', () => {
    const expired = credsFile('expired.creds', { sub: 'U', exp: 1_700_000_000 });
    expect(thrown(() => natsConnectOptions({ natsUrl: 'h:1', natsCredsFile: expired }))).toEqual({ code: 'HOOKLINE_ERR_CONFIG', message: `HOOKLINE_NATS_CREDS=${expired}: its user JWT expired at 2023-11-14T22:13:20.000Z; issue new credentials for this user` });
  });
});

describe('NATS start failures name the setting and never print a secret', () => {
  const refused = Object.assign(new Error("'Authorization Violation'"), { name: 'AuthorizationError' });
  it.each<[string, NatsAccess, string]>([
    ['user', { natsUrl: 'nats://h:1', natsUser: 'app', natsPassword: 'hunter2' }, 'HOOKLINE_NATS_USER=app (HOOKLINE_NATS_PASSWORD=***): the server refused this user and password'],
    ['token', { natsUrl: 'nats://h:1', natsToken: 'hunter2' }, 'HOOKLINE_NATS_TOKEN=***: the server refused the token'],
    ['url', { natsUrl: 'nats://app:hunter2@h:1' }, 'HOOKLINE_NATS_URL=nats://app:***@h:1: the server refused the credentials in the URL'],
    ['nkey', { natsUrl: 'nats://h:1', natsNkeyFile: '/etc/hookline/user.nk' }, 'HOOKLINE_NATS_NKEY=/etc/hookline/user.nk: the server refused this nkey'],
    ['creds', { natsUrl: 'nats://h:1', natsCredsFile: '/etc/hookline/user.creds' }, 'HOOKLINE_NATS_CREDS=/etc/hookline/user.creds: the server refused the user of this creds file'],
    ['none', { natsUrl: 'nats://h:1' }, 'HOOKLINE_NATS_URL=nats://h:1: the server requires authentication and none is set'],
  ])('refused credentials (%s)', (_mode, access, start) => {
    const { message } = natsStartError(access, refused);
    expect(message.startsWith(`${start} ('Authorization Violation'); check them against the server's authorization config`)).toBe(true);
    expect(message).not.toContain('hunter2');
  });

  it('an untrusted server certificate points at HOOKLINE_NATS_TLS_CA', () => {
    const untrusted = Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    expect(natsStartError({ natsUrl: 'tls://h:1' }, untrusted).message).toBe("HOOKLINE_NATS_URL=tls://h:1: the server's TLS certificate is not trusted (self-signed certificate in certificate chain); set HOOKLINE_NATS_TLS_CA to the CA that signed it");
    expect(natsStartError({ natsUrl: 'tls://h:1', natsTlsCa: '/ca.pem' }, untrusted).message).toBe("HOOKLINE_NATS_TLS_CA=/ca.pem: the server's certificate is not signed by this CA (self-signed certificate in certificate chain); give the CA that signed the NATS servers' certificates");
  });

  it('masks every seed of a list', () => {
    expect(maskedNatsUrl('tls://a:b@h1:4222,tls://tok@h2:4222,h3:4222')).toBe('tls://a:***@h1:4222,tls://***@h2:4222,h3:4222');
  });
});

describe('NATS settings', () => {
  const failure = (environment: Record<string, string>) => thrown(() => settingsFromEnvironment(environment)).message;
  it('take replicas 1-5, default 1', () => {
    expect(settingsFromEnvironment({}).natsReplicas).toBe(1);
    expect(settingsFromEnvironment({ HOOKLINE_NATS_REPLICAS: '3' }).natsReplicas).toBe(3);
    expect(failure({ HOOKLINE_NATS_REPLICAS: '6' })).toBe('HOOKLINE_NATS_REPLICAS must be a whole number 1-5, got "6"');
  });

  it('refuse half a pair and two authentication modes at once', () => {
    expect(failure({ HOOKLINE_NATS_PASSWORD: 'pw' })).toBe('HOOKLINE_NATS_PASSWORD needs HOOKLINE_NATS_USER: set the user the password belongs to');
    expect(failure({ HOOKLINE_NATS_USER: 'app' })).toBe("HOOKLINE_NATS_USER needs HOOKLINE_NATS_PASSWORD: set the user's password");
    expect(failure({ HOOKLINE_NATS_TOKEN: 't', HOOKLINE_NATS_CREDS: '/x.creds' })).toBe('HOOKLINE_NATS_CREDS cannot be combined with HOOKLINE_NATS_TOKEN: NATS authenticates a client one way; keep the one your server expects');
    expect(failure({ HOOKLINE_NATS_TLS_CERT: '/c.pem' })).toMatch(/^HOOKLINE_NATS_TLS_CERT needs its pair/);
  });
});

describe('HOOKLINE_NATS_URL schemes', () => {
  it('warns about each seed whose scheme is not nats:// or tls://, its credentials masked', () => {
    expect(natsSchemeWarnings('nats://a:4222, tls://b:4222,c:4222,NATS://d:4222', maskedNatsUrl)).toEqual([]);
    const warnings = natsSchemeWarnings('nats://a:4222,http://user:secret@b:4222,ws://c:8080', maskedNatsUrl);
    expect(warnings).toEqual([
      'HOOKLINE_NATS_URL: http://user:***@b:4222 has the scheme http://, which NATS does not speak; it is dialled as nats:// (plain TCP) all the same. Write nats://host:4222, or tls://host:4222 for TLS',
      'HOOKLINE_NATS_URL: ws://c:8080 has the scheme ws://, which NATS does not speak; it is dialled as nats:// (plain TCP) all the same. Write nats://host:4222, or tls://host:4222 for TLS',
    ]);
    expect(warnings.join('\n')).not.toContain('secret');
  });
});
