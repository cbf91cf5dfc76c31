import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultNatsLimits, encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createOperator, createUser } from '@nats-io/nkeys';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { NatsAccess } from '../../src/transport/nats-access.js';
import { natsConnectOptions } from '../../src/transport/nats-connection.js';
import { connect } from '@nats-io/transport-node';
import { freePort, natsServerProcess } from './nats.js';
import { makeTempDir } from './temp-dir.js';
import { waitFor } from './wait-for.js';

/**
 * A NATS cluster of our own for the tests: three `nats-server` processes on loopback ports, routed
 * to each other, JetStream on each with its own store directory, TLS for clients (a CA and
 * certificates made here with openssl) and one way of authenticating. The machine's NATS on 4222
 * is never touched. `kill9(i)` then `start(i)` brings one server back on its port and store, as a
 * crashed member would be restarted.
 *
 * Auth profiles (NATS takes one scheme per server config):
 * - `users`: a user/password and an nkey user, and mutual TLS (`verify: true`): every client shows
 *   a certificate signed by the CA.
 * - `token`: one token.
 * - `operator`: decentralised auth: an operator, an account with JetStream and a user, made with
 *   @nats-io/jwt and @nats-io/nkeys, preloaded into a memory resolver; clients use a .creds file.
 */

export type NatsClusterAuth = 'users' | 'token' | 'operator';

/** Files and secrets a test hands to Hookline and to its own clients. */
export interface NatsClusterCredentials {
  user: string;
  password: string;
  token: string;
  /** A file holding an nkey user's seed (users profile). */
  nkeyFile: string;
  /** A .creds file of a user of the account (operator profile). */
  credsFile: string;
  /** A .creds file of a user whose JWT expired an hour ago (operator profile). */
  expiredCredsFile: string;
  /** The text of a new .creds file for a user of the account, expiring at `exp` (Unix seconds) if given (operator profile). */
  issueCreds(name: string, exp?: number): Promise<string>;
}

export interface NatsClusterPki {
  /** The CA that signed the servers' and the client's certificates. */
  ca: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed nothing here: the servers do not verify with it. */
  otherCa: string;
}

export interface NatsClusterMember {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly running: boolean;
  start(): Promise<void>;
  /** SIGKILL: the store is left as a crash leaves it. Resolves once the process is gone. */
  kill9(): Promise<void>;
}

export interface TestNatsCluster {
  readonly auth: NatsClusterAuth;
  readonly members: NatsClusterMember[];
  /** Every member's client URL, comma-separated, `tls://`. */
  readonly seeds: string;
  readonly pki: NatsClusterPki;
  readonly credentials: NatsClusterCredentials;
  /** HOOKLINE_NATS_* settings of a client that authenticates the profile's (first) way. */
  hooklineSettings(): Record<string, string>;
  /** The same as a NatsAccess (for in-process clients). */
  access(): NatsAccess;
  /** A client connection of the profile, reconnecting forever. */
  connect(): Promise<NatsConnection>;
  member(name: string): NatsClusterMember;
  /** The name of the member leading `stream` now (waits until it has one, other than `notOn` when given). */
  streamLeader(connection: NatsConnection, stream: string, notOn?: string): Promise<string>;
  /** Kills every member and removes the stores and certificates. */
  dispose(): Promise<void>;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all EC P-256. */
function makePki(dir: string): NatsClusterPki {
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, ['req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=hookline-test-ca']);
  openssl(dir, ['req', '-x509', ...ecKey, '-keyout', 'other-ca.key', '-out', 'other-ca.pem', '-days', '2', '-subj', '/CN=hookline-other-ca']);
  for (const [name, extensions] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${extensions}\n`);
    openssl(dir, ['req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=hookline-${name}`]);
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`]);
  }
  return { ca: join(dir, 'ca.pem'), clientCert: join(dir, 'client.pem'), clientKey: join(dir, 'client.key'), otherCa: join(dir, 'other-ca.pem') };
}

const decoder = new TextDecoder();

/** The operator profile's server config lines, and creds files for a user (and an expired one). */
async function makeOperator(dir: string): Promise<{ config: string; credsFile: string; expiredCredsFile: string; issueCreds: NatsClusterCredentials['issueCreds'] }> {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const operatorJwt = await encodeOperator('hookline-test-operator', operator, { system_account: system.getPublicKey() });
  const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
  const accountJwt = await encodeAccount('HOOKLINE', account, { limits: { ...defaultNatsLimits(), conn: -1, leaf: -1, imports: -1, exports: -1, wildcards: true, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 } }, { signer: operator });
  const issueCreds = async (name: string, exp?: number) => {
    const user = createUser();
    return decoder.decode(fmtCreds(await encodeUser(name, user, account, {}, exp !== undefined ? { exp } : {}), user));
  };
  const creds = async (name: string, exp?: number) => {
    const path = join(dir, `${name}.creds`);
    writeFileSync(path, await issueCreds(name, exp));
    return path;
  };
  writeFileSync(join(dir, 'operator.jwt'), operatorJwt);
  const config = [
    `operator: "${join(dir, 'operator.jwt')}"`,
    `system_account: ${system.getPublicKey()}`,
    'resolver: MEMORY',
    `resolver_preload: { ${system.getPublicKey()}: "${systemJwt}", ${account.getPublicKey()}: "${accountJwt}" }`,
  ].join('\n');
  return { config, credsFile: await creds('hookline'), expiredCredsFile: await creds('expired', Math.floor(Date.now() / 1000) - 3600), issueCreds };
}

export async function startNatsCluster(auth: NatsClusterAuth, size = 3): Promise<TestNatsCluster> {
  const dir = makeTempDir('hookline-nats-cluster-');
  const pki = makePki(dir.path);
  const nkeyUser = createUser();
  const nkeyFile = join(dir.path, 'user.nk');
  writeFileSync(nkeyFile, `${decoder.decode(nkeyUser.getSeed())}\n`);
  const credentials: NatsClusterCredentials = { user: 'hookline', password: randomBytes(9).toString('base64url'), token: randomBytes(12).toString('hex'), nkeyFile, credsFile: '', expiredCredsFile: '', issueCreds: () => Promise.reject(new Error('creds are issued in the operator profile only')) };
  let authConfig: string;
  if (auth === 'users') {
    authConfig = `authorization { users: [ { user: "${credentials.user}", password: "${credentials.password}" }, { nkey: "${nkeyUser.getPublicKey()}" } ] }`;
  } else if (auth === 'token') {
    authConfig = `authorization { token: "${credentials.token}" }`;
  } else {
    const operator = await makeOperator(dir.path);
    authConfig = operator.config;
    credentials.credsFile = operator.credsFile;
    credentials.expiredCredsFile = operator.expiredCredsFile;
    credentials.issueCreds = operator.issueCreds;
  }
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })));
  const members: NatsClusterMember[] = ports.map(({ client, route }, index) => {
    const name = `n${index + 1}`;
    const store = join(dir.path, `store-${name}`);
    const configFile = join(dir.path, `${name}.conf`);
    const routes = ports.filter((_, other) => other !== index).map((peer) => `nats-route://127.0.0.1:${peer.route}`);
    writeFileSync(
      configFile,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${client}`,
        `jetstream { store_dir: "${store}", max_memory_store: 64MB, max_file_store: 2GB }`,
        `tls { cert_file: "${join(dir.path, 'server.pem')}", key_file: "${join(dir.path, 'server.key')}", ca_file: "${pki.ca}", verify: ${auth === 'users'}, timeout: 5 }`,
        ...(size > 1 ? [`cluster { name: hltest, listen: 127.0.0.1:${route}, routes: [${routes.join(', ')}] }`] : []),
        authConfig,
      ].join('\n'),
    );
    const serverProcess = natsServerProcess(['-c', configFile], `nats-server ${name}`, client);
    const member: NatsClusterMember = {
      name,
      port: client,
      url: `tls://127.0.0.1:${client}`,
      get running() {
        return serverProcess.running;
      },
      start: () => serverProcess.start(),
      kill9: () => serverProcess.signal('SIGKILL'),
    };
    return member;
  });

  const access = (): NatsAccess => {
    const base: NatsAccess = { natsUrl: members.map((member) => member.url).join(','), natsTlsCa: pki.ca };
    if (auth === 'users') return { ...base, natsUser: credentials.user, natsPassword: credentials.password, natsTlsCert: pki.clientCert, natsTlsKey: pki.clientKey };
    if (auth === 'token') return { ...base, natsToken: credentials.token };
    return { ...base, natsCredsFile: credentials.credsFile };
  };
  const settingNames: Record<string, keyof NatsAccess> = {
    HOOKLINE_NATS_URL: 'natsUrl',
    HOOKLINE_NATS_USER: 'natsUser',
    HOOKLINE_NATS_PASSWORD: 'natsPassword',
    HOOKLINE_NATS_TOKEN: 'natsToken',
    HOOKLINE_NATS_NKEY: 'natsNkeyFile',
    HOOKLINE_NATS_CREDS: 'natsCredsFile',
    HOOKLINE_NATS_TLS_CA: 'natsTlsCa',
    HOOKLINE_NATS_TLS_CERT: 'natsTlsCert',
    HOOKLINE_NATS_TLS_KEY: 'natsTlsKey',
  };

  const cluster: TestNatsCluster = {
    auth,
    members,
    seeds: members.map((member) => member.url).join(','),
    pki,
    credentials,
    access,
    hooklineSettings() {
      const settings: Record<string, string> = {};
      const given = access();
      for (const [variable, key] of Object.entries(settingNames)) if (given[key]) settings[variable] = String(given[key]);
      return settings;
    },
    connect: () => connect(natsConnectOptions(access(), { name: 'hookline-test', reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 5_000 })),
    member(name) {
      const found = members.find((member) => member.name === name);
      if (!found) throw new Error(`no member ${name}`);
      return found;
    },
    streamLeader(connection, stream, notOn) {
      return waitFor(
        async () => {
          const info = await (await jetstreamManager(connection)).streams.info(stream).catch(() => null);
          const leader = info?.cluster?.leader;
          return leader && leader !== notOn ? leader : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, message: `stream ${stream} to have a leader` },
      );
    },
    async dispose() {
      await Promise.all(members.map((member) => member.kill9()));
      dir.remove();
    },
  };
  try {
    await Promise.all(members.map((member) => member.start()));
    // JetStream is usable once the meta group has a leader: a replicated stream can be made.
    const probe = await cluster.connect();
    try {
      await waitFor(
        async () => {
          const info = await (await jetstreamManager(probe)).getAccountInfo().catch(() => null);
          return info !== null;
        },
        { timeoutMs: 60_000, intervalMs: 250, message: 'JetStream of the NATS cluster to answer' },
      );
    } finally {
      await probe.close();
    }
  } catch (error) {
    await cluster.dispose();
    throw error;
  }
  return cluster;
}
