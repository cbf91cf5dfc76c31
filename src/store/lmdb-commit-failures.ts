import { statfs } from 'node:fs/promises';

/**
 * Surviving lmdb-js commit failures (a full disk, an I/O error) without losing the process or
 * misreporting the cause. The store wraps every write with `observed` and maps failures with
 * `commitFailureCause`.
 */

/**
 * What lmdb-js rejects every write of a failed commit (disk full, I/O error) with. The cause is in a
 * promise at `error.commitError` that nothing in lmdb-js observes, and each write batch also holds a
 * commit promise of its own that nobody awaits (kriszyp/lmdb-js#368). Left unobserved, those
 * rejections end the process under Node's default `--unhandled-rejections=throw`: a full disk
 * would kill the node instead of turning ingest into 503s.
 */
const LMDB_COMMIT_FAILED = 'Commit failed (see commitError for details)';
/** Below this much free space, a failed commit is taken for a full disk whatever errno it carries (EIO included). */
const DISK_FULL_FREE_BYTES = 1024 * 1024;
/**
 * How long to wait for a failed commit's `commitError`. lmdb-js (3.5, write.js) rejects it only
 * when its write thread reports an error status; a failed batch it finds in a later callback gets
 * a new `commitError` that only the next error status would settle. Awaited unbounded, that would
 * hold a writer (a delivery's outcome, an ingest's answer) for good.
 */
const COMMIT_ERROR_WAIT_MS = 250;

export function isLmdbCommitFailure(error: unknown): error is Error & { commitError: Promise<unknown> } {
  return error instanceof Error && error.message === LMDB_COMMIT_FAILED && typeof (error as { commitError?: { catch?: unknown } }).commitError?.catch === 'function';
}

/** Observes a failed commit's `commitError` for a write whose own rejection its caller handles. */
export function observed<T>(write: Promise<T>): Promise<T> {
  write.catch((error: unknown) => {
    if (isLmdbCommitFailure(error)) error.commitError.catch(() => {});
  });
  return write;
}

let commitFailureGuardInstalled = false;

/**
 * Observes lmdb-js's unawaited commit promises when a commit fails (the writes that failed are told
 * through their own promises). Any other unhandled rejection keeps Node's default outcome: when
 * this is the only listener, it is rethrown as an uncaught exception.
 */
export function installCommitFailureGuard(): void {
  if (commitFailureGuardInstalled) return;
  commitFailureGuardInstalled = true;
  process.on('unhandledRejection', function observeLmdbCommitFailure(reason) {
    if (isLmdbCommitFailure(reason)) {
      reason.commitError.catch(() => {});
      return;
    }
    if (process.listenerCount('unhandledRejection') === 1) throw reason;
  });
}

/**
 * The cause of a failed lmdb-js commit (observing its `commitError`), as an error whose `code` is
 * `ENOSPC` when the disk is full: by errno, or by the free space left when the errno is another
 * (a full tmpfs or ext4 can report EIO). Other errors pass through unchanged.
 */
export async function commitFailureCause(error: unknown, dataDir: string): Promise<unknown> {
  if (!isLmdbCommitFailure(error)) return error;
  let timer: NodeJS.Timeout | undefined;
  const cause = await Promise.race([
    error.commitError.then(
      () => error,
      (inner: unknown) => inner,
    ),
    // No cause in time: the free space decides, below.
    new Promise<unknown>((resolve) => (timer = setTimeout(resolve, COMMIT_ERROR_WAIT_MS, error))),
  ]).finally(() => clearTimeout(timer));
  const errno = (cause as { code?: unknown }).code;
  let full = errno === 28 || errno === 'ENOSPC' || /No space left/i.test(String((cause as Error).message));
  if (!full) {
    const space = await statfs(dataDir).catch(() => null);
    full = space !== null && space.bavail * space.bsize < DISK_FULL_FREE_BYTES;
  }
  return Object.assign(new Error(`LMDB commit failed: ${(cause as Error).message ?? String(cause)}`, { cause }), full ? { code: 'ENOSPC' } : {});
}

