import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublishCommand } from '../../src/cli/publish.js';
import type { Settings } from '../../src/config/settings.js';
import type { NatsAccess } from '../../src/transport/nats-access.js';
import { captureIo } from '../helpers/cli.js';
import { expectOneLineFailure, serveUntilExit } from '../helpers/failed-start.js';
import { configureReceiver, startTestHookline } from '../helpers/hookline.js';
import { SHARED_NATS_URL, deleteStreams, freePort, natsServerProcess, natsSettings, publishUntilAcked, uniqueNatsNames } from '../helpers/nats.js';
import { startNatsCluster, type NatsClusterAuth, type TestNatsCluster } from '../helpers/nats-cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Hookline on a secured three-server NATS cluster (TLS on every client connection, a CA made with
 * openssl; see test/helpers/nats-cluster.ts), with HOOKLINE_NATS_REPLICAS=3 and all three seeds:
 * every way of authenticating carries an event from a publisher to the receiver, and every bad
 * setting ends `hookline serve` within 15 s with one line naming it, secrets masked.
 */

const START_LIMIT_MS = 15_000;

/** A single node on the cluster as `access` reaches it; an event published with the cluster's client is delivered. */
async function deliversAnEvent(cluster: TestNatsCluster, access: NatsAccess, publisher: NatsConnection): Promise<void> {
  const names = uniqueNatsNames();
  try {
    const hookline = await startTestHookline({ ...natsSettings(access.natsUrl, names), ...(access as Partial<Settings>), natsReplicas: 3 });
    try {
      const receiver = await startReceiver();
      await configureReceiver(hookline, receiver);
      const stream = await (await jetstreamManager(publisher)).streams.info(names.natsStream);
      expect(stream.config.num_replicas).toBe(3);
      expect(stream.cluster?.replicas).toHaveLength(2);
      const id = `evt_${cluster.auth}_${names.natsDurable}`;
      await publishUntilAcked(publisher, 'default', { id, type: 'service.trigger.event', data: { auth: cluster.auth } }, names.natsSubjectPrefix, Date.now() + 20_000);
      const delivery = await waitFor(() => receiver.received.find((received) => received.envelope.id === id), { timeoutMs: 20_000, message: `event ${id} delivered` });
      expect(delivery.verified).toBe(true);
    } finally {
      await hookline.close();
    }
  } finally {
    await deleteStreams(publisher, [names.natsStream]);
  }
}

/** `hookline serve` on the cluster with these NATS settings: it must fail, and soon. */
async function failedStart(settings: Record<string, string>) {
  const dir = makeTempDir('hookline-nats-bad-');
  try {
    const result = await serveUntilExit({ HOOKLINE_DATA_DIR: dir.path, HOOKLINE_NATS_REPLICAS: '3', ...uniqueNatsSettings(), ...settings }, { timeoutMs: 30_000 });
    expect(result.elapsedMs).toBeLessThan(START_LIMIT_MS);
    return result;
  } finally {
    dir.remove();
  }
}

function uniqueNatsSettings(): Record<string, string> {
  const names = uniqueNatsNames();
  return { HOOKLINE_NATS_STREAM: names.natsStream, HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix, HOOKLINE_NATS_DURABLE: names.natsDurable };
}

/** A cluster of `auth` for the describe block, and a publisher connection to it. */
function clusterFor(auth: NatsClusterAuth): { cluster: () => TestNatsCluster; publisher: () => NatsConnection } {
  let cluster: TestNatsCluster;
  let publisher: NatsConnection;
  beforeAll(async () => {
    cluster = await startNatsCluster(auth);
    publisher = await cluster.connect();
  }, 120_000);
  afterAll(async () => {
    await publisher?.close();
    await cluster?.dispose();
  });
  return { cluster: () => cluster, publisher: () => publisher };
}

describe('NATS servers that cannot hold what Hookline asks', () => {
  it('a server without JetStream: one line, within 15 s', async () => {
    const port = await freePort();
    const server = natsServerProcess(['-a', '127.0.0.1', '-p', String(port)], `nats-server without JetStream on ${port}`, port);
    await server.start();
    try {
      expectOneLineFailure(await failedStart({ HOOKLINE_NATS_URL: `nats://127.0.0.1:${port}`, HOOKLINE_NATS_REPLICAS: '1' }), /^hookline serve: HOOKLINE_NATS_URL=nats:\/\/127\.0\.0\.1:\d+: the server runs without JetStream; start it with -js/);
    } finally {
      await server.signal('SIGKILL');
    }
  }, 60_000);


  it('replicas 3 on a single (unclustered) server: one line naming HOOKLINE_NATS_REPLICAS', async () => {
    const result = await failedStart({ HOOKLINE_NATS_URL: SHARED_NATS_URL });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_REPLICAS=3: cannot keep 3 replicas of the stream HL_TEST_\w+: the NATS server is not part of a cluster, so it keeps one copy of each stream; set it to at most the number of NATS servers, or start them$/);
  }, 60_000);
});

describe('users and mutual TLS', { timeout: 90_000 }, () => {
  const { cluster, publisher } = clusterFor('users');

  it('user and password, with a client certificate', async () => {
    await deliversAnEvent(cluster(), cluster().access(), publisher());
  });

  it('an nkey, with a client certificate', async () => {
    const { natsUser: _user, natsPassword: _password, ...rest } = cluster().access();
    await deliversAnEvent(cluster(), { ...rest, natsNkeyFile: cluster().credentials.nkeyFile }, publisher());
  });

  it('hookline publish reads the same settings, and names the one that is wrong', async () => {
    const names = uniqueNatsNames();
    const manager = await jetstreamManager(publisher());
    await manager.streams.add({ name: names.natsStream, subjects: [`${names.natsSubjectPrefix}.>`], storage: StorageType.File, num_replicas: 3 });
    try {
      const publish = async (env: Record<string, string>) => {
        const io = captureIo({ ...cluster().hooklineSettings(), HOOKLINE_NATS_SUBJECT_PREFIX: names.natsSubjectPrefix, ...env });
        const code = await createPublishCommand(io).run(['--project', 'default', '--type', 'service.trigger.event', '--data', '{"a":1}', '--wait', '0']);
        return { code, out: io.out(), err: io.err() };
      };
      const published = await publish({});
      expect(published, published.err).toMatchObject({ code: 0 });
      expect(published.out).toMatch(/^published evt_\S+ on .* \(stream seq 1\)/);
      const refused = await publish({ HOOKLINE_NATS_PASSWORD: 'wrong-password-here' });
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/^hookline publish: cannot reach NATS: HOOKLINE_NATS_USER=hookline \(HOOKLINE_NATS_PASSWORD=\*\*\*\): the server refused/);
      expect(refused.err).not.toContain('wrong-password-here');
    } finally {
      await deleteStreams(publisher(), [names.natsStream]);
    }
  });

  it('a wrong password: one line naming the user, the password masked', async () => {
    const result = await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_PASSWORD: 'not-the-password' });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_USER=hookline \(HOOKLINE_NATS_PASSWORD=\*\*\*\): the server refused this user and password/);
    expect(result.stderr + result.stdout).not.toContain('not-the-password');
    expect(result.stderr + result.stdout).not.toContain(cluster().credentials.password);
  });

  it('no client certificate where the servers ask for one', async () => {
    const { HOOKLINE_NATS_TLS_CERT: _cert, HOOKLINE_NATS_TLS_KEY: _key, ...settings } = cluster().hooklineSettings();
    const result = await failedStart(settings);
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_URL=tls:\/\/127\.0\.0\.1:\d+,.*: the TLS handshake failed .*set HOOKLINE_NATS_TLS_CERT and HOOKLINE_NATS_TLS_KEY/);
  });

  it('no client certificate, with a dead seed listed first: the certificate hint, not the dead seed', async () => {
    const { HOOKLINE_NATS_TLS_CERT: _cert, HOOKLINE_NATS_TLS_KEY: _key, ...settings } = cluster().hooklineSettings();
    const dead = await freePort();
    const result = await failedStart({ ...settings, HOOKLINE_NATS_URL: `tls://127.0.0.1:${dead},${cluster().members[0]!.url}` });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_URL=tls:\/\/127\.0\.0\.1:\d+,tls:\/\/127\.0\.0\.1:\d+: the TLS handshake failed .*set HOOKLINE_NATS_TLS_CERT and HOOKLINE_NATS_TLS_KEY/);
  });

  it('a CA that did not sign the servers, and no CA at all', async () => {
    const other = cluster().pki.otherCa;
    expectOneLineFailure(await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_TLS_CA: other }), new RegExp(`^hookline serve: HOOKLINE_NATS_TLS_CA=${other}: the server's certificate is not signed by this CA`));
    const { HOOKLINE_NATS_TLS_CA: _ca, ...settings } = cluster().hooklineSettings();
    expectOneLineFailure(await failedStart(settings), /^hookline serve: HOOKLINE_NATS_URL=tls:.*: the server's TLS certificate is not trusted .*set HOOKLINE_NATS_TLS_CA/);
  });

  it('a key file that cannot be read, and a key that is not the certificate\'s', async () => {
    const missing = join(cluster().pki.clientKey, '..', 'nope.key');
    expectOneLineFailure(await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_TLS_KEY: missing }), new RegExp(`^hookline serve: HOOKLINE_NATS_TLS_KEY=${missing}: cannot be read \\(no such file\\)`));
    const serverKey = join(cluster().pki.clientKey, '..', 'server.key');
    expectOneLineFailure(await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_TLS_KEY: serverKey }), new RegExp(`^hookline serve: HOOKLINE_NATS_TLS_KEY=${serverKey}: does not go with HOOKLINE_NATS_TLS_CERT=`));
  });

  it('a stream made earlier with another replica count is reported, not used', async () => {
    const settings = uniqueNatsSettings();
    const manager = await jetstreamManager(publisher());
    await manager.streams.add({ name: settings.HOOKLINE_NATS_STREAM!, subjects: [`${settings.HOOKLINE_NATS_SUBJECT_PREFIX}.>`], storage: StorageType.File, num_replicas: 1 });
    try {
      const result = await failedStart({ ...cluster().hooklineSettings(), ...settings });
      expectOneLineFailure(result, new RegExp(`^hookline serve: HOOKLINE_NATS_REPLICAS=3: the stream ${settings.HOOKLINE_NATS_STREAM} exists with 1 replica; change it to 3 \\(nats stream edit ${settings.HOOKLINE_NATS_STREAM} --replicas 3\\) or set HOOKLINE_NATS_REPLICAS=1$`));
    } finally {
      await deleteStreams(publisher(), [settings.HOOKLINE_NATS_STREAM!]);
    }
  });
});

describe('token', { timeout: 90_000 }, () => {
  const { cluster, publisher } = clusterFor('token');

  it('a token', async () => {
    await deliversAnEvent(cluster(), cluster().access(), publisher());
  });

  it('a wrong token: one line, the token masked', async () => {
    const result = await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_TOKEN: 'wrong-token-value' });
    expectOneLineFailure(result, /^hookline serve: HOOKLINE_NATS_TOKEN=\*\*\*: the server refused the token/);
    expect(result.stderr + result.stdout).not.toContain('wrong-token-value');
  });

  it('a token in the URL', async () => {
    const { natsToken, natsUrl, ...rest } = cluster().access();
    const inUrl = natsUrl.replaceAll('tls://', `tls://${natsToken}@`);
    await deliversAnEvent(cluster(), { ...rest, natsUrl: inUrl }, publisher());
  });
});

describe('creds (operator mode)', { timeout: 90_000 }, () => {
  const { cluster, publisher } = clusterFor('operator');

  it('a creds file of a user of the account', async () => {
    await deliversAnEvent(cluster(), cluster().access(), publisher());
  });

  it('a creds file saved with CRLF line endings (an editor on Windows)', async () => {
    const dir = makeTempDir('hookline-crlf-creds-');
    try {
      const crlf = join(dir.path, 'hookline.creds');
      writeFileSync(crlf, readFileSync(cluster().credentials.credsFile, 'utf8').replace(/\r?\n/g, '\r\n'));
      await deliversAnEvent(cluster(), { ...cluster().access(), natsCredsFile: crlf }, publisher());
    } finally {
      dir.remove();
    }
  });

  it('an expired creds file, and a malformed one', async () => {
    const expired = cluster().credentials.expiredCredsFile;
    expectOneLineFailure(await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_CREDS: expired }), new RegExp(`^hookline serve: HOOKLINE_NATS_CREDS=${expired}: its user JWT expired at `));
    const malformed = cluster().pki.ca;
    expectOneLineFailure(await failedStart({ ...cluster().hooklineSettings(), HOOKLINE_NATS_CREDS: malformed }), new RegExp(`^hookline serve: HOOKLINE_NATS_CREDS=${malformed}: is not a valid creds file`));
  });
});
