import type { Settings } from '../config/settings.js';

/**
 * What reaching NATS takes, named as the settings name it: the seed URLs, how the client
 * authenticates, TLS. Only the parts that may be printed leave this module unmasked.
 */

/** What reaching NATS takes; only `natsUrl` is required (an open server on one URL). */
export type NatsAccess = { natsUrl: string } & Partial<
  Pick<Settings, 'natsUser' | 'natsPassword' | 'natsToken' | 'natsNkeyFile' | 'natsCredsFile' | 'natsTlsCa' | 'natsTlsCert' | 'natsTlsKey'>
>;

/** The NATS access of a node's settings (natsUrl set). */
export function natsAccess(settings: Settings): NatsAccess {
  const { natsUrl, natsUser, natsPassword, natsToken, natsNkeyFile, natsCredsFile, natsTlsCa, natsTlsCert, natsTlsKey } = settings;
  return { natsUrl: natsUrl!, natsUser, natsPassword, natsToken, natsNkeyFile, natsCredsFile, natsTlsCa, natsTlsCert, natsTlsKey };
}

/** How a client proves who it is, as far as an error line may say it (never the secret itself). */
export type NatsAuthMode = 'url' | 'user' | 'token' | 'nkey' | 'creds' | 'none';

export function natsAuthMode(access: NatsAccess): NatsAuthMode {
  if (access.natsCredsFile) return 'creds';
  if (access.natsNkeyFile) return 'nkey';
  if (access.natsToken) return 'token';
  if (access.natsUser) return 'user';
  return seedUrls(access.natsUrl).some((url) => url.userInfo !== null) ? 'url' : 'none';
}

export interface SeedUrl {
  /** `host:port` as nats.js dials it, with the scheme kept (nats.js strips it). */
  server: string;
  /** `user:password` or a token, URL-decoded; null when the URL carries none. */
  userInfo: string | null;
  tls: boolean;
}

/** The comma-separated seed URLs, each split into what nats.js dials and what it would ignore. */
export function seedUrls(natsUrl: string): SeedUrl[] {
  return natsUrl
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '')
    .map((url) => {
      const match = /^(?:([a-z]+):\/\/)?(?:([^@/]*)@)?(.*)$/i.exec(url)!;
      const [, scheme, userInfo, rest] = match;
      return { server: scheme ? `${scheme}://${rest}` : rest!, userInfo: userInfo === undefined ? null : decoded(userInfo), tls: scheme?.toLowerCase() === 'tls' };
    });
}

/** Percent-decoded, or as written when it is not valid percent-encoding (a literal `%` in a password). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** HOOKLINE_NATS_URL as it may be printed: a password, or a lone user part (a NATS token), masked. */
export function maskedNatsUrl(servers: string | readonly string[]): string {
  const list = typeof servers === 'string' ? servers.split(',') : servers;
  return list.map((server) => server.trim().replace(/^([a-z]+:\/\/)?([^@/]*)@/i, (_match, scheme: string | undefined, userInfo: string) => {
    const separator = userInfo.indexOf(':');
    return `${scheme ?? ''}${separator >= 0 ? `${userInfo.slice(0, separator)}:***` : '***'}@`;
  })).join(',');
}

