import type { KV } from '@nats-io/kv';
import { hashApiKey } from '../actors/engine.js';
import type { Logger } from '../logger.js';
import type { ProjectRecord } from '../store/records.js';
import type { HooklineStore } from '../store/store.js';
import { retrying } from '../transport/nats-streams.js';
import { apiKeyHashOfEntry, directoryKeyEntry, directoryProjectEntry, projectIdOfEntry } from './key-directory.js';
import { isWrongRevision } from './node-presence.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Longest a start waits for the directory's entries before serving (the rest are read on demand). */
const DIRECTORY_MIRROR_WAIT_MS = 10_000;

/**
 * The cluster's directory (a KV bucket every node shares: projects and API key hashes) mirrored into
 * this node's LMDB, so that any node authenticates any key; moved out of cluster-node.ts as is.
 */
export class DirectoryMirror {
  private watch: { stop(): void } | null = null;

  constructor(
    readonly directory: KV,
    /** The engine's store, once the engine is attached. */
    private readonly store: () => HooklineStore,
    private readonly logger: Logger,
  ) {}

  /**
   * Mirrors the directory into LMDB, then keeps following it; false when the start goes on before
   * the mirror is complete. The start waits until the watch has brought every entry stored when it
   * began: the one at the stream's last sequence, read after the watch was made. A watch entry's
   * `delta` (the consumer's pending count) is no such signal: it may not reach 0 while other nodes
   * write. The wait is bounded, from making the watch on (a start waiting here hung silently, twice
   * in full test-suite runs): projects and keys not mirrored yet are read from the directory on
   * demand, and the watch catches up in the background.
   */
  async mirror(): Promise<boolean> {
    const mirrored = this.followDirectory();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, DIRECTORY_MIRROR_WAIT_MS, 'late')));
    try {
      if ((await Promise.race([mirrored, late])) !== 'late') return true;
    } finally {
      clearTimeout(timer);
    }
    this.logger.warn({ waitedMs: DIRECTORY_MIRROR_WAIT_MS }, 'cluster: the directory watch has not brought every entry yet; starting anyway, projects are read from the directory on demand');
    mirrored.then(
      () => this.logger.info({}, 'cluster: directory mirrored'),
      (error: unknown) => this.logger.warn({ err: error }, 'cluster: the directory watch could not start; projects are read from the directory on demand'),
    );
    return false;
  }

  /** Starts following the directory; resolves once every entry stored at the start is mirrored. */
  private async followDirectory(): Promise<void> {
    const watch = await retrying('watching the directory', () => this.directory.watch(), this.logger);
    this.watch = watch;
    let initialDone!: () => void;
    const initial = new Promise<void>((resolve) => (initialDone = resolve));
    const status = await retrying('reading the directory', () => this.directory.status(), this.logger);
    const lastAtStart = status.values === 0 ? 0 : status.streamInfo.state.last_seq;
    if (lastAtStart === 0) initialDone();
    (async () => {
      for await (const entry of watch) {
        if (entry.operation === 'PUT') await this.applyDirectoryEntry(entry.key, decoder.decode(entry.value));
        else await this.forgetDirectoryEntry(entry.key);
        if (entry.revision >= lastAtStart) initialDone();
      }
    })().catch((error: unknown) => this.logger.warn({ err: error }, 'directory watch ended'));
    await initial;
  }

  private async applyDirectoryEntry(key: string, value: string): Promise<void> {
    const store = this.store();
    if (projectIdOfEntry(key) !== null) {
      const project = JSON.parse(value) as ProjectRecord;
      await store.mirrorDirectory(project, null, project.id);
    } else {
      const apiKeyHash = apiKeyHashOfEntry(key);
      if (apiKeyHash) await store.mirrorDirectory(null, apiKeyHash, value);
    }
  }

  /**
   * A key revoked in the directory (`hookline keys revoke` in cluster mode), or revoked while this
   * node was down (the watch starts with every entry's latest version, deletions included): the
   * mirror is what `Engine.authenticate` reads, so the next request with the key is refused here.
   */
  private async forgetDirectoryEntry(key: string): Promise<void> {
    const apiKeyHash = apiKeyHashOfEntry(key);
    if (apiKeyHash && (await this.store().forgetApiKey(apiKeyHash))) this.logger.info({ apiKeyHash: apiKeyHash.slice(0, 12) }, 'cluster: an API key was revoked in the directory; refused here from now on');
  }

  /** Makes sure a project another node just created is mirrored here (the watch may lag); false if there is none. */
  async mirrorProject(projectId: string): Promise<boolean> {
    if (this.store().getProject(projectId)) return true;
    const entry = await this.directory.get(directoryProjectEntry(projectId));
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return false;
    await this.applyDirectoryEntry(entry.key, decoder.decode(entry.value));
    return true;
  }

  /**
   * The project of an API key this node has not mirrored yet, read from the directory itself, so a
   * key made on another node works here at once; null when the directory has no such key. The key
   * is left for the watch to mirror: written here, it could land after the watch applied the key's
   * revocation, and outlive it on this node.
   */
  async authenticate(apiKey: string): Promise<string | null> {
    const entry = await this.directory.get(directoryKeyEntry(hashApiKey(apiKey))).catch(() => null);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
    const projectId = decoder.decode(entry.value);
    if (!(await this.mirrorProject(projectId))) return null;
    return projectId;
  }

  /**
   * Creates a project's directory entry unless it exists (`SharedProjects`): nodes started together
   * all find `default` missing, and only the one whose create wins makes its key.
   */
  async claimProject(record: ProjectRecord): Promise<boolean> {
    try {
      await this.directory.create(directoryProjectEntry(record.id), encoder.encode(JSON.stringify(record)));
      return true;
    } catch (error) {
      if (!isWrongRevision(error)) throw error;
      await this.mirrorProject(record.id);
      return false;
    }
  }

  async project(record: ProjectRecord, apiKeyHash: string | null): Promise<void> {
    await this.directory.put(directoryProjectEntry(record.id), encoder.encode(JSON.stringify(record)));
    if (apiKeyHash) await this.directory.put(directoryKeyEntry(apiKeyHash), encoder.encode(record.id));
  }

  stop(): void {
    this.watch?.stop();
  }
}
