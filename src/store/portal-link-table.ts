/**
 * Portal links of a single node (or a NATS-mode node): the `portal-links` table of its LMDB
 * environment, by token hash. Records read back are checked, like every record from disk.
 */
import type { Database, RootDatabase } from 'lmdb';
import { portalLinkRecord } from '../portal/portal-links.js';
import type { PortalLinkRecord, PortalLinkStore } from '../portal/portal-links.js';
import { observed } from './lmdb-commit-failures.js';
import { openTable } from './tables.js';

export class PortalLinkTable implements PortalLinkStore {
  private readonly table: Database<PortalLinkRecord, string>;

  constructor(root: RootDatabase) {
    this.table = openTable(root, 'portal-links');
  }

  async put(tokenHash: string, record: PortalLinkRecord): Promise<void> {
    await observed(this.table.put(tokenHash, record));
  }

  async get(tokenHash: string): Promise<PortalLinkRecord | null> {
    const parsed = portalLinkRecord.safeParse(this.table.get(tokenHash));
    return parsed.success ? parsed.data : null;
  }

  async delete(tokenHash: string): Promise<void> {
    await observed(this.table.remove(tokenHash));
  }

  async *entries(): AsyncIterable<readonly [string, PortalLinkRecord]> {
    for (const { key, value } of this.table.getRange()) {
      const parsed = portalLinkRecord.safeParse(value);
      if (parsed.success) yield [key, parsed.data] as const;
    }
  }
}
