/**
 * Read-only access to the events a Hookline node stored in its LMDB directory, for `hookline
 * replay`. LMDB lets several processes open one environment, so this works beside a running node
 * and never blocks it; it opens only the `events` database, read-only, and never creates anything.
 * Records are checked with zod as they are read back, since the files may come from another version.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import { z } from 'zod';

/** The part of a stored event (src/store/records.ts `EventRecord`) that replay reads. */
const storedEventSchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: z.number(),
  envelope: z.instanceof(Uint8Array),
});

export interface StoredEventRef {
  readonly id: string;
  readonly type: string;
  /** When Hookline accepted the event, ms since the epoch. */
  readonly createdAt: number;
}

export interface EventFilter {
  readonly projectId: string;
  /** Inclusive, ms. */
  readonly from: number;
  /** Exclusive, ms. */
  readonly to?: number;
  readonly type?: string;
}

/** The store's layout: the `events` database, keyed `[projectId, eventId]` (src/store/store.ts). */
const EVENTS_DB = 'events';

export class EventLogReader {
  private constructor(
    private readonly root: RootDatabase,
    private readonly events: Database<unknown, [string, string]>,
  ) {}

  /** @throws {Error} with what to do when the directory holds no Hookline data. */
  static open(dataDir: string): EventLogReader {
    if (!existsSync(join(dataDir, 'data.mdb'))) {
      throw new Error(`no Hookline data in ${dataDir}: point --data-dir (or HOOKLINE_DATA_DIR) at the node's data directory`);
    }
    let root: RootDatabase;
    try {
      root = open({ path: dataDir, readOnly: true });
    } catch (error) {
      throw new Error(`cannot open ${dataDir} as Hookline data (${(error as Error).message}): point --data-dir (or HOOKLINE_DATA_DIR) at the node's data directory`, { cause: error });
    }
    return new EventLogReader(root, root.openDB({ name: EVENTS_DB }));
  }

  /** The project's events that match, oldest first (by acceptance time, then id). */
  select(filter: EventFilter): StoredEventRef[] {
    const matches: StoredEventRef[] = [];
    for (const { value } of this.events.getRange({ start: [filter.projectId, ''], end: [filter.projectId, '\uffff'] })) {
      const record = storedEventSchema.safeParse(value);
      if (!record.success) continue;
      const { id, type, createdAt } = record.data;
      if (createdAt < filter.from || (filter.to !== undefined && createdAt >= filter.to)) continue;
      if (filter.type !== undefined && type !== filter.type) continue;
      matches.push({ id, type, createdAt });
    }
    return matches.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The envelope bytes exactly as stored (and as Hookline signed and sent them). */
  envelope(projectId: string, eventId: string): Uint8Array | undefined {
    const record = storedEventSchema.safeParse(this.events.get([projectId, eventId]));
    return record.success ? record.data.envelope : undefined;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
