/**
 * HOOKLINE_NATS_URL split into its seeds. Imports nothing, so that the settings can check the
 * credentials a URL carries without an import cycle through the NATS access module.
 */

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

/** The schemes a NATS seed may be written with: plain NATS, and NATS over TLS. */
const NATS_SCHEMES: ReadonlySet<string> = new Set(['nats', 'tls']);

/**
 * A warning for each seed of HOOKLINE_NATS_URL written with another scheme (`http://`, `ws://`):
 * nats.js drops the scheme and dials plain NATS, so such a URL connects, or fails, as if it said
 * `nats://`, whatever was meant. `masked` prints a seed without its credentials.
 */
export function natsSchemeWarnings(natsUrl: string, masked: (seed: string) => string): string[] {
  return natsUrl
    .split(',')
    .map((url) => url.trim())
    .flatMap((url) => {
      const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1];
      if (scheme === undefined || NATS_SCHEMES.has(scheme.toLowerCase())) return [];
      return [`HOOKLINE_NATS_URL: ${masked(url)} has the scheme ${scheme}://, which NATS does not speak; it is dialled as nats:// (plain TCP) all the same. Write nats://host:4222, or tls://host:4222 for TLS`];
    });
}
