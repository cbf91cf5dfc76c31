import type { Settings } from '../config/settings.js';
import { seedUrls } from './nats-seeds.js';

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

/**
 * HOOKLINE_NATS_URL as it may be printed: a password, or a lone user part (a NATS token), masked.
 * The user part runs to a seed's last `@`: a password written without percent-encoding may hold
 * `/` or `@` (base64 passwords often hold `/`), and none of it may be printed.
 */
export function maskedNatsUrl(servers: string | readonly string[]): string {
  const list = typeof servers === 'string' ? servers.split(',') : servers;
  return list.map((server) => server.trim().replace(/^([a-z]+:\/\/)?(.*)@/i, (_match, scheme: string | undefined, userInfo: string) => {
    const separator = userInfo.indexOf(':');
    return `${scheme ?? ''}${separator >= 0 ? `${userInfo.slice(0, separator)}:***` : '***'}@`;
  })).join(',');
}

