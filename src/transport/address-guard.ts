import { isIP } from 'node:net';

/**
 * Address ranges a callback must not reach unless HOOKLINE_ALLOW_PRIVATE_NETWORKS=1: loopback,
 * private, link-local (cloud metadata at 169.254.169.254 included), CGNAT, multicast, unspecified,
 * and IPv4-mapped IPv6 forms of all of them.
 */
const BLOCKED_V4: Array<[base: number, maskBits: number]> = [
  [ipv4ToInt('0.0.0.0'), 8],
  [ipv4ToInt('10.0.0.0'), 8],
  [ipv4ToInt('100.64.0.0'), 10],
  [ipv4ToInt('127.0.0.0'), 8],
  [ipv4ToInt('169.254.0.0'), 16],
  [ipv4ToInt('172.16.0.0'), 12],
  [ipv4ToInt('192.0.0.0'), 24],
  [ipv4ToInt('192.168.0.0'), 16],
  [ipv4ToInt('198.18.0.0'), 15],
  [ipv4ToInt('224.0.0.0'), 4],
  [ipv4ToInt('240.0.0.0'), 4],
];

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function blockedV4(address: string): boolean {
  const value = ipv4ToInt(address);
  return BLOCKED_V4.some(([base, bits]) => Math.floor(value / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits)));
}

function blockedV6(address: string): boolean {
  const lower = address.toLowerCase();
  const mapped = /^(?:0*:)*:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^::(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return blockedV4(mapped[1]!);
  const mappedHex = /^(?:0*:)*:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (mappedHex) {
    const high = parseInt(mappedHex[1]!, 16);
    const low = parseInt(mappedHex[2]!, 16);
    return blockedV4(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  return lower === '::' || lower === '::1' || /^f[cd]/.test(lower) || /^fe[89ab]/.test(lower) || /^ff/.test(lower);
}

/** True when `address` (an IP literal) is in a range callbacks may not reach by default. */
export function isBlockedAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) return blockedV4(address);
  if (kind === 6) return blockedV6(address);
  return false;
}

/** True when a callback URL names a blocked IP literal or `localhost` directly. */
export function isBlockedLiteralHost(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || isBlockedAddress(host);
}
