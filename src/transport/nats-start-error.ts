import { HooklineError, isHooklineError } from '../errors.js';
import { maskedNatsUrl, natsAuthMode } from './nats-access.js';
import type { NatsAccess } from './nats-access.js';
import { SETUP_DEADLINE_MS } from './nats-streams.js';

/**
 * How long the first connection to NATS may take. A NATS server greets a client at once, so a
 * silent peer (Redis, an HTTP server, a firewall dropping packets) is not NATS: failing after 5 s
 * instead of nats.js's 20 s lets a wrong HOOKLINE_NATS_URL end the start well within 15 s.
 */
export const NATS_CONNECT_TIMEOUT_MS = 5_000;

/** Node's codes for a server certificate that does not verify. */
const UNTRUSTED_CERTIFICATE = new Set(['SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'CERT_UNTRUSTED', 'CERT_SIGNATURE_FAILURE']);

/**
 * The setting an authentication failure is about, as it may be printed: the creds or nkey file, the
 * user (password masked), the token (masked), or the URL's credentials (masked).
 */
function authSetting(access: NatsAccess): string {
  switch (natsAuthMode(access)) {
    case 'creds':
      return `HOOKLINE_NATS_CREDS=${access.natsCredsFile}: the server refused the user of this creds file`;
    case 'nkey':
      return `HOOKLINE_NATS_NKEY=${access.natsNkeyFile}: the server refused this nkey`;
    case 'token':
      return 'HOOKLINE_NATS_TOKEN=***: the server refused the token';
    case 'user':
      return `HOOKLINE_NATS_USER=${access.natsUser} (HOOKLINE_NATS_PASSWORD=***): the server refused this user and password`;
    case 'url':
      return `HOOKLINE_NATS_URL=${maskedNatsUrl(access.natsUrl)}: the server refused the credentials in the URL`;
    case 'none':
      return `HOOKLINE_NATS_URL=${maskedNatsUrl(access.natsUrl)}: the server requires authentication and none is set`;
  }
}

/** The words of a NATS or Node error, its cause's included, in lower case. */
function errorText(error: unknown): string {
  const cause = error as { name?: string; message?: string; cause?: { message?: string } } | null;
  return `${cause?.name ?? ''} ${cause?.message ?? ''} ${cause?.cause?.message ?? ''}`.toLowerCase();
}

/** Whether a server refused the client's credentials, or found them expired. */
export function refusesCredentials(error: unknown): boolean {
  const text = errorText(error);
  // An expired certificate, the server's or the client's (a TLS alert), is TLS's, not the credentials'.
  return !isTlsFailure(error, text) && (text.includes('expired') || text.includes('authorization') || text.includes('authentication') || text.includes('permission'));
}

function isTlsFailure(error: unknown, text: string): boolean {
  const cause = error as { code?: unknown; cause?: { code?: unknown } } | null;
  // Node's and OpenSSL's codes are strings; a JetStream API error's is a number (10008).
  const found = cause?.code ?? cause?.cause?.code;
  const code = typeof found === 'string' ? found : '';
  return code.startsWith('ERR_SSL') || code.startsWith('CERT_') || UNTRUSTED_CERTIFICATE.has(code) || text.includes('certificate') || text.includes('ssl');
}

/**
 * One line for a NATS start that failed: the setting, its value (secrets masked) and what to check,
 * picked by how it failed (refused, unresolvable, silent, credentials refused or expired, TLS, no
 * JetStream). A Hookline error (a setting's file that cannot be used) is already that line.
 */
export function natsStartError(target: NatsAccess | string | readonly string[], error: unknown): HooklineError {
  if (isHooklineError(error)) return error;
  const access: NatsAccess = typeof target === 'object' && 'natsUrl' in target ? target : { natsUrl: typeof target === 'string' ? target : target.join(',') };
  const cause = error as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  const text = errorText(error);
  const code = cause.code ?? cause.cause?.code;
  const url = `HOOKLINE_NATS_URL=${maskedNatsUrl(access.natsUrl)}`;
  // OpenSSL's messages span lines and name source files: the alert alone says what happened.
  const alert = /(?:sslv3|tlsv1\d?) alert ([a-z ]+)/i.exec(cause.message ?? '')?.[1];
  const said = alert ? `the server sent the TLS alert "${alert}"` : (cause.message ?? String(error)).replace(/\s+/g, ' ').trim();
  let line: string;
  let path = 'HOOKLINE_NATS_URL';
  if (code === 'ECONNREFUSED' || text.includes('connection refused')) {
    line = `${url}: nothing listens there; start NATS (nats-server -js) or correct the host and port`;
  } else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    line = `${url}: its host does not resolve; correct the host name`;
  } else if (refusesCredentials(error) && text.includes('expired')) {
    path = natsAuthMode(access) === 'creds' ? 'HOOKLINE_NATS_CREDS' : path;
    line = `${authSetting(access)}: its credentials expired (${said}); issue new ones`;
  } else if (refusesCredentials(error)) {
    path = authSettingName(access);
    line = `${authSetting(access)} (${said}); check them against the server's authorization config`;
  } else if (code !== undefined && UNTRUSTED_CERTIFICATE.has(code)) {
    path = 'HOOKLINE_NATS_TLS_CA';
    line = access.natsTlsCa
      ? `HOOKLINE_NATS_TLS_CA=${access.natsTlsCa}: the server's certificate is not signed by this CA (${said}); give the CA that signed the NATS servers' certificates`
      : `${url}: the server's TLS certificate is not trusted (${said}); set HOOKLINE_NATS_TLS_CA to the CA that signed it`;
  } else if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    line = `${url}: the server's TLS certificate does not name this host (${said}); connect by a name or address the certificate holds`;
  } else if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    line = `${url}: the server's TLS certificate is not valid now (${said}); renew the server's certificate`;
  } else if (text.includes("does not support 'tls'") || text.includes('tls is not available')) {
    line = `${url}: the server does not offer TLS, but a tls:// URL or HOOKLINE_NATS_TLS_* asks for it; enable TLS on the server, or use nats:// without TLS settings`;
  } else if (text.includes('certificate') || text.includes('handshake') || text.includes('ssl') || text.includes('tls')) {
    path = access.natsTlsCert ? 'HOOKLINE_NATS_TLS_CERT' : 'HOOKLINE_NATS_TLS_CA';
    line = access.natsTlsCert
      ? `HOOKLINE_NATS_TLS_CERT=${access.natsTlsCert}: the TLS handshake failed (${said}); check that the server trusts the CA of this client certificate`
      : `${url}: the TLS handshake failed (${said}); if the server asks for a client certificate, set HOOKLINE_NATS_TLS_CERT and HOOKLINE_NATS_TLS_KEY`;
  } else if (text.includes('still failing after') && text.includes('jetstream is not enabled')) {
    // The server greeted as one with JetStream (`reachJetStream`), yet nobody answered its API.
    line = `${url}: nothing answered the JetStream API for ${SETUP_DEADLINE_MS / 1000} s (${said}): the NATS server reached runs JetStream but is cut off from the other servers of its cluster, or JetStream is not enabled for this account; check nats server report jetstream`;
  } else if (text.includes('temporarily unavailable') || text.includes('still failing after') || String(code) === '10008') {
    // A NATS cluster that lost a server elects a new leader (JetStream's or a stream's), and answers
    // 10008 or nothing meanwhile: nothing to fix in the settings, unless it lasts.
    line = `${url}: NATS is electing a leader (a NATS server was lost or restarted) and JetStream did not answer in time (${said}); start the node again once the NATS cluster has a leader (nats server report jetstream), and check that a majority of its servers run and reach each other`;
  } else if (text.includes('timeout')) {
    line = `${url}: no NATS server answered within ${NATS_CONNECT_TIMEOUT_MS / 1000} s (a NATS server greets at once, so this is another kind of server, or the traffic is dropped); point it at a NATS server's client port, e.g. nats://127.0.0.1:4222`;
  } else if (text.includes('jetstream') || text.includes('no responders') || code === '503') {
    line = `${url}: the server runs without JetStream; start it with -js (nats-server -js)`;
  } else {
    line = `${url}: ${said}; check that it is a NATS server with JetStream (nats-server -js)`;
  }
  const message = path === 'HOOKLINE_NATS_URL' ? `${line}, or unset HOOKLINE_NATS_URL to run without NATS` : line;
  return new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', message, { cause: error, details: [{ path, message: line }] });
}

function authSettingName(access: NatsAccess): string {
  const mode = natsAuthMode(access);
  return mode === 'creds' ? 'HOOKLINE_NATS_CREDS' : mode === 'nkey' ? 'HOOKLINE_NATS_NKEY' : mode === 'token' ? 'HOOKLINE_NATS_TOKEN' : mode === 'user' ? 'HOOKLINE_NATS_USER' : 'HOOKLINE_NATS_URL';
}
