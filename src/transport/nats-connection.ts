import { readFileSync } from 'node:fs';
import { connect as netConnect, isIP } from 'node:net';
import { connect as tlsConnect, createSecureContext } from 'node:tls';
import { connect, credsAuthenticator, nkeyAuthenticator, nkeys } from '@nats-io/transport-node';
import type { Authenticator, ConnectionOptions, NatsConnection, TlsOptions } from '@nats-io/transport-node';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { HooklineError } from '../errors.js';
import { natsAuthMode } from './nats-access.js';
import { seedUrls } from './nats-seeds.js';
import type { NatsAccess } from './nats-access.js';
import { NATS_CONNECT_TIMEOUT_MS, natsStartError, refusesCredentials } from './nats-start-error.js';

/**
 * Settings → nats.js connect options: the seed URLs (with credentials carried in them taken out,
 * since nats.js ignores them), one authentication mode, and TLS. Every file a setting names is read
 * and checked here, before any connection, so a missing CA, a malformed creds file or a key that is
 * not the certificate's fails the start with one line naming that setting.
 */

function configError(setting: string, value: string, problem: string): HooklineError {
  return new HooklineError('HOOKLINE_ERR_CONFIG', `${setting}=${value}: ${problem}`, { details: [{ path: setting, message: problem }] });
}

/**
 * A value that is a file's content rather than its path: PEM text, a creds file's text, an nkey seed
 * (`SU…`) or a JWT, pasted into the variable as secret stores often inject them.
 */
const FILE_CONTENT = /[\r\n]|-----BEGIN |^S[A-Z][A-Z2-7]{40,}$|^eyJ/;

function readSettingFile(setting: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    // Never echoed: for HOOKLINE_NATS_NKEY, _CREDS and _TLS_KEY it is the secret itself.
    if (FILE_CONTENT.test(path.trim())) {
      throw configError(setting, '***', `holds what looks like the file's content (not shown), not the path of a file; write it to a file readable by Hookline and set ${setting} to that path`);
    }
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory, not a file' : ((error as Error).message ?? code);
    throw configError(setting, path, `cannot be read (${why}); point it at a readable file`);
  }
}

/** The part of a user JWT's claims checked before connecting: when it expires (Unix seconds), if ever. */
const jwtClaims = z.object({ exp: z.number().optional() });

/** The user JWT and seed of a `.creds` file, checked: well formed, a user seed, not expired. */
function readCreds(path: string, now: number): Uint8Array {
  // nats.js reads the blocks line by line at \n: a file saved with CRLF would not parse there.
  const text = readSettingFile('HOOKLINE_NATS_CREDS', path).replace(/\r\n?/g, '\n');
  const block = (label: string) => new RegExp(`-{3,}BEGIN ${label}-{3,}\\s*(\\S+)\\s+-{3,}END ${label}-{3,}`).exec(text)?.[1];
  const jwt = block('NATS USER JWT');
  const seed = block('USER NKEY SEED');
  const malformed = (what: string) => configError('HOOKLINE_NATS_CREDS', path, `is not a valid creds file (${what}); use the .creds file made for this user (nsc generate creds, or your operator's tooling)`);
  if (!jwt || !seed) throw malformed('it needs a NATS USER JWT block and a USER NKEY SEED block');
  checkUserSeed(seed, malformed);
  let claims: z.infer<typeof jwtClaims>;
  try {
    claims = jwtClaims.parse(JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')));
  } catch {
    throw malformed('its JWT does not decode');
  }
  if (claims.exp !== undefined && claims.exp * 1000 <= now) {
    throw configError('HOOKLINE_NATS_CREDS', path, `its user JWT expired at ${new Date(claims.exp * 1000).toISOString()}; issue new credentials for this user`);
  }
  return new TextEncoder().encode(text);
}

function checkUserSeed(seed: string, malformed: (what: string) => HooklineError): void {
  if (!seed.startsWith('SU')) throw malformed('the seed is not a user nkey seed (SU…)');
  try {
    nkeys.fromSeed(new TextEncoder().encode(seed));
  } catch {
    throw malformed('the seed does not decode');
  }
}

function readNkeySeed(path: string): Uint8Array {
  const seed = readSettingFile('HOOKLINE_NATS_NKEY', path).trim();
  checkUserSeed(seed, (what) => configError('HOOKLINE_NATS_NKEY', path, `is not an nkey seed file (${what}); it holds one line, the user's seed SU… (nk -gen user)`));
  return new TextEncoder().encode(seed);
}

/** TLS options, with every file read and the certificate matched to its key before connecting. */
function tlsOptions(access: NatsAccess): TlsOptions {
  const tls: TlsOptions = {};
  if (access.natsTlsCa) tls.ca = pemFile('HOOKLINE_NATS_TLS_CA', access.natsTlsCa);
  if (access.natsTlsCert && access.natsTlsKey) {
    tls.cert = pemFile('HOOKLINE_NATS_TLS_CERT', access.natsTlsCert);
    tls.key = pemFile('HOOKLINE_NATS_TLS_KEY', access.natsTlsKey);
    try {
      createSecureContext({ cert: tls.cert, key: tls.key });
    } catch (error) {
      throw configError('HOOKLINE_NATS_TLS_KEY', access.natsTlsKey, `does not go with HOOKLINE_NATS_TLS_CERT=${access.natsTlsCert} (${(error as Error).message}); give the private key of that client certificate`);
    }
  }
  if (tls.ca) {
    try {
      createSecureContext({ ca: tls.ca });
    } catch (error) {
      throw configError('HOOKLINE_NATS_TLS_CA', access.natsTlsCa!, `is not a usable CA bundle (${(error as Error).message}); give the PEM of the CA that signed the servers' certificates`);
    }
  }
  return tls;
}

function pemFile(setting: string, path: string): string {
  const text = readSettingFile(setting, path);
  if (!text.includes('-----BEGIN ')) throw configError(setting, path, 'is not a PEM file (no -----BEGIN line); give the PEM file');
  return text;
}

/**
 * The creds file's authenticator, reading the file again at each (re)connect: credentials renewed on
 * disk (a JWT about to expire) are used without a restart. A file that cannot be used then is logged
 * once and the last good one is sent: throwing into nats.js would close the connection for good.
 */
function credsFileAuthenticator(path: string, now: number, logger: Pick<Logger, 'warn'> | undefined): Authenticator {
  let lastGood = readCreds(path, now);
  let reported: string | null = null;
  return credsAuthenticator(() => {
    try {
      lastGood = readCreds(path, Date.now());
      reported = null;
    } catch (error) {
      const problem = (error as Error).message;
      if (problem !== reported) logger?.warn({ setting: 'HOOKLINE_NATS_CREDS' }, `${problem} (sending the creds read before meanwhile)`);
      reported = problem;
    }
    return lastGood;
  });
}

/**
 * nats.js connect options for `access`: servers, authentication and TLS; `extra` adds the caller's
 * own (name, reconnect policy). Throws a `HOOKLINE_ERR_CONFIG` naming the setting when a file it
 * names cannot be used; `logger` hears of a creds file that cannot be read again at a reconnect.
 */
export function natsConnectOptions(access: NatsAccess, extra: Partial<ConnectionOptions> = {}, now = Date.now(), logger?: Pick<Logger, 'warn'>): ConnectionOptions {
  const seeds = seedUrls(access.natsUrl);
  // nats.js gives each seed the whole timeout in turn: several silent seeds would take too long to fail.
  const timeout = Math.max(MIN_SEED_TIMEOUT_MS, Math.floor(NATS_CONNECT_TIMEOUT_MS / seeds.length));
  const options: ConnectionOptions = { servers: seeds.map((seed) => seed.server), timeout, ...extra };
  const mode = natsAuthMode(access);
  if (mode === 'creds') options.authenticator = credsFileAuthenticator(access.natsCredsFile!, now, logger);
  else if (mode === 'nkey') options.authenticator = nkeyAuthenticator(readNkeySeed(access.natsNkeyFile!));
  else if (mode === 'token') options.token = access.natsToken!;
  else if (mode === 'user') Object.assign(options, { user: access.natsUser!, pass: access.natsPassword ?? '' });
  else if (mode === 'url') {
    const userInfo = seeds.find((seed) => seed.userInfo !== null)!.userInfo!;
    const separator = userInfo.indexOf(':');
    if (separator >= 0) Object.assign(options, { user: userInfo.slice(0, separator), pass: userInfo.slice(separator + 1) });
    else options.token = userInfo;
  }
  if (access.natsTlsCa || access.natsTlsCert || seeds.some((seed) => seed.tls)) options.tls = tlsOptions(access);
  return options;
}

/** How long the first connection may take in all, whatever nats.js does meanwhile. */
const FIRST_CONNECT_DEADLINE_MS = NATS_CONNECT_TIMEOUT_MS + 2_000;

/** The first connection's time for each seed at least, however many seeds there are. */
const MIN_SEED_TIMEOUT_MS = 2_000;

export interface ConnectNatsOptions extends Partial<ConnectionOptions> {
  /**
   * Where losing and regaining the connection is reported, once each time, with what the server
   * refused meanwhile (credentials, permissions) and, as an error, the connection's end. @default none
   */
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Called once if the connection ends for good although nobody closed it (nats.js gave up), with
   * the line naming what to fix; the owner stops claiming to be ready. @default none
   */
  onClosed?: (reason: HooklineError) => void;
  /**
   * What stops with the connection, as the error line and the readiness reason say it when the
   * connection ends for good. @default 'NATS ingest has stopped'
   */
  stops?: string;
}

/**
 * Connects to NATS as `access` says, reconnecting forever to any seed or server the cluster
 * announces. A failure to connect is one `HOOKLINE_ERR_NATS_UNAVAILABLE` (or `HOOKLINE_ERR_CONFIG`)
 * line naming the setting to check (src/transport/nats-start-error.ts).
 */
export async function connectNats(access: NatsAccess, { logger, onClosed, stops, ...extra }: ConnectNatsOptions = {}): Promise<NatsConnection> {
  const options = natsConnectOptions(access, { reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, ...extra }, Date.now(), logger);
  let connection: NatsConnection;
  const pending = connect(options);
  let timer: NodeJS.Timeout | undefined;
  // nats.js may keep dialling forever when a server closes the connection during the handshake
  // (reconnect on, several seeds): the start gives up on its own clock too.
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout: no NATS connection within ${FIRST_CONNECT_DEADLINE_MS} ms`)), FIRST_CONNECT_DEADLINE_MS);
  });
  try {
    connection = await Promise.race([pending, deadline]);
  } catch (error) {
    pending.then((late) => late.close(), () => {}).catch(() => {});
    const startError = natsStartError(access, error);
    // nats.js reports only the error of the seed it tried last (in random order), often a dead one,
    // and a missing client certificate as a silent server: a seed's refusal says what to fix.
    const blamesUrl = startError.details[0]?.path === 'HOOKLINE_NATS_URL';
    const refusal = blamesUrl ? await firstSeedRefusal(seedUrls(access.natsUrl).map((seed) => seed.server), options) : null;
    throw refusal ? natsStartError(access, refusal) : startError;
  } finally {
    clearTimeout(timer);
  }
  keepReconnectingThroughRefusals(connection);
  if (logger) void reportConnectionChanges(connection, access, logger);
  void connection.closed().then((error) => {
    if (!error) return;
    const reason = natsConnectionClosed(access, error, stops);
    logger?.error({ err: error }, reason.message);
    onClosed?.(reason);
  });
  return connection;
}

/**
 * Refused credentials end the first connect (a wrong token is a start error, said in one line; with
 * them ignored, nats.js dialled the cluster's servers until the start's deadline). Once connected,
 * they must not end the connection: nats.js gives up after two refusals in a row unless
 * `ignoreAuthErrorAbort`, and a server restarted with another authorization config for a few
 * seconds, or a JWT that expired, would stop the node's NATS work for good. nats.js reads the option
 * when a refusal comes, from the options object the connection keeps (test/integration/nats-auth-recovery.test.ts).
 */
function keepReconnectingThroughRefusals(connection: NatsConnection): void {
  const kept = (connection as unknown as { options?: ConnectionOptions }).options;
  if (kept) kept.ignoreAuthErrorAbort = true;
}

/**
 * The first refusal, in seed order, that a seed probed alone gives (every seed at once, each probe
 * bounded): its TLS alert, or its refusal of the credentials. A server that wants a client
 * certificate refuses one missing only after a TLS 1.3 handshake, which nats.js sees as a silent
 * server; credentials refused by one of several seeds are lost when nats.js tries a dead one last.
 * With one seed, nats.js heard its refusal of the credentials itself.
 */
async function firstSeedRefusal(servers: string[], options: ConnectionOptions): Promise<Error | null> {
  const refusals = await Promise.all(
    servers.map(async (server) => {
      const [tls, credentials] = await Promise.all([options.tls ? tlsRefusal(server, options.tls) : null, servers.length > 1 ? credentialsRefusal(server, options) : null]);
      return tls ?? credentials;
    }),
  );
  return refusals.find((refusal) => refusal !== null) ?? null;
}

/** The server's refusal of the credentials (or their expiry), when a connection to it alone gets one. */
async function credentialsRefusal(server: string, options: ConnectionOptions): Promise<Error | null> {
  try {
    await (await connect({ ...options, servers: [server], reconnect: false })).close();
    return null;
  } catch (error) {
    return refusesCredentials(error) ? (error as Error) : null;
  }
}

/** How long the TLS probe waits for a refusal after its handshake. */
const TLS_PROBE_MS = 1_500;

/**
 * The error a NATS server's TLS gives this client, if any: reads the server's INFO line, upgrades
 * the socket as nats.js does, and waits briefly for an alert (certificate required, unknown CA).
 */
function tlsRefusal(server: string, tls: TlsOptions): Promise<Error | null> {
  const [, host = '127.0.0.1', port = '4222'] = /^(?:[a-z]+:\/\/)?\[?([^\]]*?)\]?(?::(\d+))?$/i.exec(server) ?? [];
  return new Promise((resolve) => {
    const raw = netConnect({ host, port: Number(port) });
    let settled = false;
    const done = (error: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      raw.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(null), NATS_CONNECT_TIMEOUT_MS);
    raw.once('error', () => done(null));
    raw.once('data', () => {
      const secure = tlsConnect({ socket: raw, servername: isIP(host) ? undefined : host, ca: tls.ca, cert: tls.cert, key: tls.key });
      // Only TLS's own errors: a reset says nothing the seed's other failures did not.
      secure.once('error', (error: NodeJS.ErrnoException) => done(/ssl|tls|certificate|alert|handshake/i.test(`${error.code ?? ''} ${error.message}`) ? error : null));
      secure.once('secureConnect', () => setTimeout(() => done(null), TLS_PROBE_MS));
      secure.resume();
    });
  });
}

/**
 * One line when the connection drops, one for each new thing a server refuses meanwhile (the
 * setting to check, worded as at start), and one when it is back (with the server it reached).
 */
async function reportConnectionChanges(connection: NatsConnection, access: NatsAccess, logger: Pick<Logger, 'info' | 'warn'>): Promise<void> {
  let down = false;
  let refused: string | null = null;
  for await (const status of connection.status()) {
    if (status.type === 'disconnect' && !down) {
      down = true;
      logger.warn({ server: status.server }, 'NATS connection lost; reconnecting to any seed or cluster server');
    } else if (status.type === 'reconnect') {
      down = false;
      refused = null;
      logger.info({ server: status.server }, 'NATS connection restored');
    } else if (status.type === 'error') {
      const line = natsStartError(access, status.error).message;
      if (line !== refused) logger.warn({ err: status.error }, `NATS server refused: ${line}; still reconnecting`);
      refused = line;
    }
  }
}

/** The error for a connection nats.js gave up on: what to fix, as a start would say it, and what `stops` with it. */
export function natsConnectionClosed(access: NatsAccess, error: unknown, stops = 'NATS ingest has stopped'): HooklineError {
  const cause = natsStartError(access, error);
  return new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', `NATS connection closed for good, ${stops}: ${cause.message}; then restart Hookline`, { cause: error, details: cause.details });
}
