import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { configureReceiver, startTestHookline } from '../helpers/hookline.js';
import { deleteStreams, natsSettings, publishUntilAcked, tokenNatsServer, uniqueNatsNames } from '../helpers/nats.js';
import type { NatsServerProcess } from '../helpers/nats.js';
import { startNatsCluster } from '../helpers/nats-cluster.js';
import type { TestNatsCluster } from '../helpers/nats-cluster.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A NATS server that refuses Hookline's credentials for a while (restarted with another token, as a
 * botched config rollout would) and then takes them again: Hookline must connect again and go on
 * ingesting. nats.js gives up after two refusals in a row unless told not to. Own nats-server child
 * (own port, config and store); the shared one on 4222 is never touched.
 */

const TOKEN = 'tok123';

let dir: ReturnType<typeof makeTempDir> | null = null;
let server: NatsServerProcess | null = null;
let publisher: NatsConnection | null = null;
let stream: string | null = null;
let cluster: TestNatsCluster | null = null;

afterEach(async () => {
  if (publisher && stream) await deleteStreams(publisher, [stream]).catch(() => {});
  await publisher?.close();
  await server?.signal('SIGKILL');
  await cluster?.dispose();
  dir?.remove();
  dir = server = publisher = stream = cluster = null;
});

describe('NATS refusing the credentials for a while', () => {
  it('an event published once the server takes the token again is delivered', async () => {
    dir = makeTempDir('hookline-nats-auth-');
    const nats = await tokenNatsServer(dir.path);
    server = nats.process;
    await nats.restartWith(TOKEN);
    const url = nats.url;
    const names = uniqueNatsNames();
    stream = names.natsStream;
    const hookline = await startTestHookline({ ...natsSettings(url, names), natsToken: TOKEN });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);

    await nats.restartWith('othertoken');
    // The wrong token stays in force until the server has refused Hookline's reconnects at least
    // twice in a row: nats.js gives up after two unless told not to.
    await waitFor(async () => (await nats.refusals('hookline')) >= 2, { timeoutMs: 15_000, message: "the server to refuse Hookline's token twice" });
    await nats.restartWith(TOKEN);

    publisher = await connect({ servers: url, token: TOKEN, timeout: 3_000 });
    const id = `evt_auth_${names.natsDurable}`;
    await publishUntilAcked(publisher, 'default', { id, type: 'service.trigger.event', data: { after: 'refusal' } }, names.natsSubjectPrefix, Date.now() + 10_000);
    await waitFor(() => receiver.received.some((delivery) => delivery.envelope.id === id), { timeoutMs: 20_000, message: `event ${id} delivered after the refusal` });
    expect((await hookline.api('GET', '/readyz', { key: null })).body).toEqual({ status: 'ready' });
  }, 60_000);

  it('a creds file renewed on disk before its JWT expires is used at the reconnect: events go on being delivered', async () => {
    cluster = await startNatsCluster('operator', 1);
    dir = makeTempDir('hookline-nats-creds-');
    const credsFile = join(dir.path, 'hookline.creds');
    // Expires soon after the start: the server then drops the connection, and the reconnect must present the renewed file.
    const expiresAt = Math.floor(Date.now() / 1000) + 6;
    writeFileSync(credsFile, await cluster.credentials.issueCreds('short-lived', expiresAt));
    const names = uniqueNatsNames();
    stream = names.natsStream;
    const hookline = await startTestHookline({ ...natsSettings(cluster.seeds, names), ...cluster.access(), natsCredsFile: credsFile });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    writeFileSync(credsFile, await cluster.credentials.issueCreds('renewed'));

    publisher = await cluster.connect();
    await waitFor(() => Date.now() > (expiresAt + 1) * 1000, { timeoutMs: 15_000, message: 'the first JWT to expire' });
    const id = `evt_creds_${names.natsDurable}`;
    await publishUntilAcked(publisher, 'default', { id, type: 'service.trigger.event', data: { after: 'expiry' } }, names.natsSubjectPrefix, Date.now() + 10_000);
    await waitFor(() => receiver.received.some((delivery) => delivery.envelope.id === id), { timeoutMs: 20_000, message: `event ${id} delivered after the JWT expired` });
    expect((await hookline.api('GET', '/readyz', { key: null })).body).toEqual({ status: 'ready' });
  }, 120_000);
});
