import { isIP } from 'node:net';

/**
 * Address ranges a callback must not reach unless HOOKLINE_ALLOW_PRIVATE_NETWORKS=1: loopback,
 * private, link-local (cloud metadata at 169.254.169.254 included), CGNAT, multicast, unspecified,
 * and IPv6 forms that embed any of them (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96).
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

/**
 * The eight 16-bit groups of an IPv6 literal already accepted by `isIP`: `::` expanded, a trailing
 * dotted quad split into two groups, a zone id (`%eth0`) dropped. Judging the groups rather than
 * the text catches every spelling of one address (`0:0:0:0:0:0:0:1` is `::1`).
 */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dottedTail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dottedTail) {
    const value = ipv4ToInt(dottedTail[1]!);
    text = `${text.slice(0, -dottedTail[1]!.length)}${Math.floor(value / 65536).toString(16)}:${(value % 65536).toString(16)}`;
  }
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const [head, tail] = text.split('::');
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...new Array<number>(Math.max(0, 8 - left.length - right.length)).fill(0), ...right];
}

function blockedV6(address: string): boolean {
  const groups = ipv6Groups(address);
  const [first = 0, second = 0, , , , sixth = 0, high = 0, low = 0] = groups;
  const embeddedV4 = `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zeroUpTo = (count: number) => groups.slice(0, count).every((group) => group === 0);
  // ::ffff:a.b.c.d (IPv4-mapped) and ::a.b.c.d (IPv4-compatible; :: and ::1 land in 0.0.0.0/8).
  if (zeroUpTo(5) && (sixth === 0xffff || sixth === 0)) return blockedV4(embeddedV4);
  // 64:ff9b::a.b.c.d: a NAT64 gateway would connect to the embedded IPv4 address.
  if (first === 0x64 && second === 0xff9b && groups.slice(2, 6).every((group) => group === 0)) return blockedV4(embeddedV4);
  // ::/8 reserved, fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast.
  return first >> 8 === 0 || (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || first >> 8 === 0xff;
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
  // A trailing dot names the same host (`localhost.` is `localhost`).
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost') || isBlockedAddress(host);
}
