/**
 * Portal links in a cluster: entries `portal.<sha256 hex of the token>` of the directory bucket
 * (key-directory.ts), their value the link's record as JSON. Nodes do not mirror them: each request
 * made with a portal token reads its entry, so a link made on one node works on every other at
 * once, and a revocation on any node refuses the link everywhere from the next request on. The
 * directory's watch ignores these entries (they are neither projects nor keys).
 */
import type { KV } from '@nats-io/kv';
import { HooklineError } from '../errors.js';
import { portalLinkRecord } from '../portal/portal-links.js';
import type { PortalLinkRecord, PortalLinkStore } from '../portal/portal-links.js';

const PORTAL_PREFIX = 'portal.';
const decoder = new TextDecoder();
const encoder = new TextEncoder();

function parseRecord(value: Uint8Array): PortalLinkRecord | null {
  try {
    const parsed = portalLinkRecord.safeParse(JSON.parse(decoder.decode(value)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export class DirectoryPortalLinks implements PortalLinkStore {
  constructor(private readonly directory: KV) {}

  async put(tokenHash: string, record: PortalLinkRecord): Promise<void> {
    await this.directory.create(`${PORTAL_PREFIX}${tokenHash}`, encoder.encode(JSON.stringify(record)));
  }

  /** @throws {HooklineError} `HOOKLINE_ERR_NATS_UNAVAILABLE` (503) when the directory cannot be read: not a 401, which would end the session. */
  async get(tokenHash: string): Promise<PortalLinkRecord | null> {
    const entry = await this.directory.get(`${PORTAL_PREFIX}${tokenHash}`).catch((error: unknown) => {
      throw new HooklineError('HOOKLINE_ERR_NATS_UNAVAILABLE', 'the cluster directory could not be read to check this portal link; try again shortly', { cause: error, retryAfterSeconds: 1 });
    });
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
    return parseRecord(entry.value);
  }

  async delete(tokenHash: string): Promise<void> {
    await this.directory.delete(`${PORTAL_PREFIX}${tokenHash}`);
  }

  async *entries(): AsyncIterable<readonly [string, PortalLinkRecord]> {
    // The bucket keeps one version per entry, so its history is the current entries (deleted ones as markers).
    for await (const entry of await this.directory.history({ key: `${PORTAL_PREFIX}>` })) {
      if (entry.operation !== 'PUT') continue;
      const record = parseRecord(entry.value);
      if (record) yield [entry.key.slice(PORTAL_PREFIX.length), record] as const;
    }
  }
}
