/**
 * Read-only access to what a Hookline node stored in its LMDB directory: its events, for `hookline
 * replay`, and its projects, for `hookline keys list` and for telling a project that does not exist
 * from one without events. LMDB lets several processes open one environment, so this works beside a
 * running node and never blocks it; it opens only the databases it reads, read-only, and never
 * creates anything. Records are checked with zod as they are read back, since the files may come
 * from another version.
 */
import type { Database, RootDatabase } from 'lmdb';
import { z } from 'zod';
import { openExistingData, openTable } from '../store/tables.js';

/** The part of a stored event (src/store/records.ts `EventRecord`) that replay reads. */
const storedEventSchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: z.number(),
  envelope: z.instanceof(Uint8Array),
});

/** The part of a stored project (src/store/records.ts `ProjectRecord`) that is listed. */
const storedProjectSchema = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.number(),
});

export interface StoredProject {
  readonly id: string;
  readonly name: string;
  /** When the project was created, ms since the epoch. */
  readonly createdAt: number;
  /** How many API keys name it (keys are stored as hashes only, so this is all there is to show). */
  readonly keys: number;
}

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

/**
 * The store's layout (src/store/store.ts): `events` keyed `[projectId, eventId]`, `projects` keyed
 * by project id, `api-keys` from key hash to project id.
 */
const EVENTS_DB = 'events';
const PROJECTS_DB = 'projects';
const API_KEYS_DB = 'api-keys';

export class EventLogReader {
  private constructor(
    private readonly root: RootDatabase,
    private readonly events: Database<unknown, [string, string]>,
    private readonly projectsDb: Database<unknown, string>,
    private readonly apiKeys: Database<unknown, string>,
  ) {}

  /** @throws {Error} with what to do when the directory holds no Hookline data. */
  static open(dataDir: string): EventLogReader {
    const root = openExistingData(dataDir, { readOnly: true });
    return new EventLogReader(root, openTable(root, EVENTS_DB), openTable(root, PROJECTS_DB), openTable(root, API_KEYS_DB));
  }

  hasProject(projectId: string): boolean {
    return storedProjectSchema.safeParse(this.projectsDb.get(projectId)).success;
  }

  /** Every project, oldest first, with how many keys it has. */
  projects(): StoredProject[] {
    const keys = new Map<string, number>();
    for (const { value } of this.apiKeys.getRange()) if (typeof value === 'string') keys.set(value, (keys.get(value) ?? 0) + 1);
    const projects: StoredProject[] = [];
    for (const { value } of this.projectsDb.getRange()) {
      const record = storedProjectSchema.safeParse(value);
      if (record.success) projects.push({ ...record.data, keys: keys.get(record.data.id) ?? 0 });
    }
    return projects.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
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
