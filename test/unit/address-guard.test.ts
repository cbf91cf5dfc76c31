import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isBlockedAddress, isBlockedLiteralHost } from '../../src/transport/address-guard.js';

/**
 * The SSRF matrix: every range the README's Security section names, in every spelling an address
 * can take (IPv4-mapped IPv6 dotted and hex, uncompressed, upper case, zone ids), and the public
 * addresses just outside each range, which must stay reachable.
 */

const BLOCKED: Record<string, string[]> = {
  'unspecified / this network 0/8': ['0.0.0.0', '0.1.2.3', '0.255.255.255'],
  'loopback 127/8': ['127.0.0.1', '127.0.0.53', '127.255.255.254', '127.1.2.3'],
  'private 10/8': ['10.0.0.1', '10.255.255.255'],
  'private 172.16/12': ['172.16.0.1', '172.20.10.5', '172.31.255.255'],
  'private 192.168/16': ['192.168.0.1', '192.168.255.255'],
  'link-local 169.254/16 and the metadata address': ['169.254.169.254', '169.254.0.1', '169.254.255.255', '169.254.170.2'],
  'CGNAT 100.64/10': ['100.64.0.1', '100.100.100.200', '100.127.255.255'],
  'IETF protocol assignments 192.0.0/24': ['192.0.0.1', '192.0.0.170'],
  'benchmarking 198.18/15': ['198.18.0.1', '198.19.255.255'],
  'multicast 224/4': ['224.0.0.1', '224.0.0.251', '239.255.255.250', '239.255.255.255'],
  'reserved 240/4 and broadcast': ['240.0.0.1', '255.255.255.255'],
  'IPv6 loopback and unspecified': ['::1', '::', '0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001', '0:0:0:0:0:0:0:0', '0::1', '::0:1'],
  'IPv6 unique local fc00::/7': ['fc00::1', 'fc00::', 'fd00::1', 'fd12:3456:789a:1::1', 'FD00::ABCD', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  'IPv6 link-local fe80::/10': ['fe80::1', 'fe80::1%eth0', 'FE80::1', 'febf:ffff::1', 'fe80:0:0:0:0:0:0:1', 'fea0::1'],
  'IPv6 multicast ff00::/8': ['ff02::1', 'ff05::1:3', 'FF0E::1'],
  'IPv4-mapped, dotted': ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:100.64.0.1', '::ffff:224.0.0.1', '::ffff:0.0.0.0', '::FFFF:192.168.1.1', '0:0:0:0:0:ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:172.16.0.1'],
  'IPv4-mapped, hex': ['::ffff:7f00:1', '::ffff:7f00:0001', '::ffff:a9fe:a9fe', '::ffff:a00:1', '::ffff:6440:1', '::ffff:e000:1', '::ffff:0:0', '::FFFF:C0A8:0101', '0:0:0:0:0:ffff:7f00:1', '0000:0000:0000:0000:0000:ffff:a9fe:a9fe'],
  'IPv4-compatible (deprecated)': ['::127.0.0.1', '::169.254.169.254', '::10.0.0.1'],
  'NAT64 64:ff9b::/96 embedding a blocked address': ['64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::a00:1'],
  'IPv6 reserved ::/8': ['::2', 'ff::1', '1::'],
};

const ALLOWED: Record<string, string[]> = {
  'public IPv4': ['8.8.8.8', '1.1.1.1', '93.184.216.34', '140.82.112.3', '52.95.110.1'],
  'just outside 10/8': ['9.255.255.255', '11.0.0.0'],
  'just outside 172.16/12': ['172.15.255.255', '172.32.0.0'],
  'just outside 192.168/16': ['192.167.255.255', '192.169.0.0'],
  'just outside 169.254/16': ['169.253.255.255', '169.255.0.0'],
  'just outside 100.64/10': ['100.63.255.255', '100.128.0.0'],
  'just outside 127/8': ['126.255.255.255', '128.0.0.0'],
  'just below multicast': ['223.255.255.255'],
  'just outside 198.18/15': ['198.17.255.255', '198.20.0.0'],
  'public IPv6': ['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:830::200e', '2001:db8::1'],
  'just outside fc00::/7 and fe80::/10': ['fbff:ffff::1', 'fe7f::1'],
  'NAT64 embedding a public address': ['64:ff9b::808:808', '64:ff9b::1.1.1.1'],
  'IPv4-mapped public': ['::ffff:8.8.8.8', '::ffff:808:808', '::ffff:5db8:d822', '0:0:0:0:0:ffff:1.1.1.1'],
  'not an address at all': ['example.com', 'localhost', '', '127.0.0.1.nip.io', '::ffff:999.0.0.1'],
};

describe('isBlockedAddress: the SSRF matrix', () => {
  for (const [range, addresses] of Object.entries(BLOCKED)) {
    it(`refuses ${range}`, () => {
      const allowed = addresses.filter((address) => !isBlockedAddress(address));
      expect(allowed, `addresses of ${range} that were let through`).toEqual([]);
    });
  }
  for (const [range, addresses] of Object.entries(ALLOWED)) {
    it(`lets through ${range}`, () => {
      const refused = addresses.filter((address) => isBlockedAddress(address));
      expect(refused, `addresses of ${range} that were refused`).toEqual([]);
    });
  }

  const octet = fc.integer({ min: 0, max: 255 });
  const ipv4 = fc.tuple(octet, octet, octet, octet);
  const dotted = ([a, b, c, d]: number[]) => `${a}.${b}.${c}.${d}`;
  const hexMapped = ([a, b, c, d]: number[]) => `::ffff:${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;

  it('treats every IPv4 address and its IPv4-mapped IPv6 forms (dotted and hex) alike', () => {
    fc.assert(
      fc.property(ipv4, (parts) => {
        const verdict = isBlockedAddress(dotted(parts));
        expect(isBlockedAddress(`::ffff:${dotted(parts)}`)).toBe(verdict);
        expect(isBlockedAddress(hexMapped(parts))).toBe(verdict);
        expect(isBlockedAddress(`0:0:0:0:0:ffff:${dotted(parts)}`)).toBe(verdict);
      }),
      { seed: 20261122, numRuns: 2000 },
    );
  });

  it('refuses every address of the blocked IPv4 ranges and the IPv6 prefixes', () => {
    const inRange = (base: number[], bits: number) =>
      fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((offset) => {
        const value = ((base[0]! << 24) >>> 0) + (base[1]! << 16) + (base[2]! << 8) + base[3]! + offset;
        return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
      });
    const ranges = fc.oneof(
      inRange([10, 0, 0, 0], 8),
      inRange([127, 0, 0, 0], 8),
      inRange([172, 16, 0, 0], 12),
      inRange([192, 168, 0, 0], 16),
      inRange([169, 254, 0, 0], 16),
      inRange([100, 64, 0, 0], 10),
      inRange([224, 0, 0, 0], 4),
      inRange([0, 0, 0, 0], 8),
    );
    fc.assert(fc.property(ranges, (parts) => isBlockedAddress(dotted(parts)) && isBlockedAddress(hexMapped(parts))), { seed: 7, numRuns: 2000 });

    const group = fc.integer({ min: 0, max: 0xffff }).map((value) => value.toString(16));
    const tail = fc.array(group, { minLength: 7, maxLength: 7 });
    const prefixed = (low: number, high: number) => fc.tuple(fc.integer({ min: low, max: high }), tail).map(([first, rest]) => [first.toString(16), ...rest].join(':'));
    const v6 = fc.oneof(prefixed(0xfc00, 0xfdff), prefixed(0xfe80, 0xfebf), prefixed(0xff00, 0xffff));
    fc.assert(fc.property(v6, (address) => isBlockedAddress(address)), { seed: 8, numRuns: 1000 });
  });
});

describe('isBlockedLiteralHost: what PUT /v1/webhook refuses', () => {
  const refused = [
    'http://127.0.0.1/hooks',
    'http://127.0.0.1:8080/hooks',
    'http://localhost/hooks',
    'http://LOCALHOST:9000/',
    'http://localhost./hooks',
    'http://api.localhost/hooks',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[fe80::1]/',
    'http://[fd00::1]:8443/',
    'https://10.1.2.3/',
    'https://100.64.0.1/',
    'http://224.0.0.1/',
    'http://0.0.0.0:80/',
    // Legacy IPv4 spellings the WHATWG URL parser turns into dotted quads.
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://0x7f.0.0.1/',
  ];
  const accepted = ['https://example.com/hooks', 'http://93.184.216.34/hooks', 'https://[2606:4700:4700::1111]/', 'https://localhost.example.com/', 'https://my-localhost.com/'];

  it.each(refused)('refuses %s', (url) => {
    expect(isBlockedLiteralHost(new URL(url))).toBe(true);
  });
  it.each(accepted)('accepts %s', (url) => {
    expect(isBlockedLiteralHost(new URL(url))).toBe(false);
  });
});
