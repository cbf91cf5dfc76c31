import { statfsSync } from 'node:fs';
import type { RootDatabase } from 'lmdb';

/** How often the used size is re-read from LMDB's stats: often enough for a quota, cheap on ingest. */
const QUOTA_CHECK_INTERVAL_MS = 250;

/** Free space kept on the data directory's filesystem: ingest stops there (the smaller of the two). */
const DISK_RESERVE_MAX_BYTES = 128 * 1024 * 1024;
const DISK_RESERVE_FRACTION = 0.05;
/** About what one ingest takes on disk: its envelope, and the rest of its records and the pages its commit copies. */
const ingestDiskBytes = (envelopeBytes: number): number => envelopeBytes + 8 * 1024;

/**
 * The guard ingest consults before it stores an event (`HooklineStore.isOverQuota`): the store's
 * size against `maxDataBytes`, and the free space of the data directory's filesystem against its
 * reserve, counting the ingests still being committed, which a reading of the free space cannot see.
 */
export class DiskQuota {
  private quotaCheckedAt = 0;
  private overQuota = false;
  private overLimit = false;
  private diskFull = false;
  /** Room above the reserve at the last reading of the filesystem, less the ingests not committed then. */
  private diskHeadroom = Infinity;
  /** `ingestDiskBytes` of the ingests begun since that reading. */
  private ingestedSinceDiskRead = 0;
  /** `ingestDiskBytes` of the ingests not yet committed, which a reading of the free space cannot see. */
  private ingestingBytes = 0;

  /**
   * @param root the environment whose used pages count against `maxDataBytes`
   * @param path the data directory, whose filesystem keeps the reserve
   * @param maxDataBytes the size above which the store is over quota; 0 for no limit
   */
  constructor(
    private readonly root: RootDatabase,
    private readonly path: string,
    private readonly maxDataBytes: number,
  ) {}

  /**
   * True when the used pages of the environment exceed `maxDataBytes` (re-read every 250 ms), or
   * when the filesystem of the data directory is down to its reserve. The reserve keeps LMDB from
   * ever meeting a full disk on an ingest: lmdb-js can corrupt its own memory on a write that fails
   * with ENOSPC, and the deliveries already stored need room for their state changes.
   *
   * The free space is re-read every 250 ms and, in between, as soon as the ingests since could
   * have used a quarter of the room left above the reserve; ingests not yet committed count as
   * used. Read on time alone, it let a fast ingest (6.5 MB in 250 ms on Node 24, in the tmpfs
   * test) or a burst of concurrent ones run through the whole reserve to the disk's end.
   */
  isOverQuota(): boolean {
    const now = performance.now();
    if (now - this.quotaCheckedAt >= QUOTA_CHECK_INTERVAL_MS) {
      this.quotaCheckedAt = now;
      const stats = this.root.getStats() as { lastPageNumber: number; pageSize: number };
      this.overLimit = this.maxDataBytes > 0 && stats.lastPageNumber * stats.pageSize >= this.maxDataBytes;
      this.overQuota = this.overLimit || this.diskAtReserve();
    } else if (this.ingestedSinceDiskRead >= this.diskHeadroom / 4) {
      this.overQuota = this.overLimit || this.diskAtReserve();
    }
    return this.overQuota;
  }

  /**
   * Counts an ingest whose envelope is `envelopeBytes` long as using disk until `ingestEnded` is
   * called with the returned bytes (whether its commit succeeded or not).
   */
  ingestBegun(envelopeBytes: number): number {
    const diskBytes = ingestDiskBytes(envelopeBytes);
    this.ingestedSinceDiskRead += diskBytes;
    this.ingestingBytes += diskBytes;
    return diskBytes;
  }

  /** The ingest `ingestBegun` returned `diskBytes` for is committed or failed. */
  ingestEnded(diskBytes: number): void {
    this.ingestingBytes -= diskBytes;
  }

  private diskAtReserve(): boolean {
    try {
      const { bavail, bsize, blocks } = statfsSync(this.path);
      const reserve = Math.min(DISK_RESERVE_MAX_BYTES, blocks * bsize * DISK_RESERVE_FRACTION);
      const free = bavail * bsize - this.ingestingBytes;
      this.diskFull = free < reserve;
      this.diskHeadroom = Math.max(0, free - reserve);
      this.ingestedSinceDiskRead = 0;
    } catch {
      // No reading (a filesystem without statfs, a transient error): the last one stands.
    }
    return this.diskFull;
  }
}
