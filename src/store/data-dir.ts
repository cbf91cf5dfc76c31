import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { HooklineError, isHooklineError } from '../errors.js';
import { lockDataDir } from './data-dir-lock.js';

/** A data directory this process owns from `claimDataDir` until `release` or `abandon`. */
export interface ClaimedDataDir {
  /** Gives the directory up after a clean stop; its contents stay. */
  release(): void;
  /**
   * Gives the directory up after a start that failed, removing whatever this start created in it
   * (the directory itself, if it made it): a failed start leaves the disk as it found it.
   */
  abandon(): void;
}

/**
 * Creates `dataDir` if needed and takes its lock (see lockDataDir). Failures name the setting,
 * its value and what to do: a path under a file, a directory this user cannot write, a read-only
 * filesystem, another process owning it.
 * @throws {HooklineError} `HOOKLINE_ERR_STARTUP` or `HOOKLINE_ERR_DATA_DIR_IN_USE`
 */
export function claimDataDir(dataDir: string): ClaimedDataDir {
  let entriesBefore: Set<string> | null;
  try {
    entriesBefore = new Set(readdirSync(dataDir));
  } catch {
    entriesBefore = null;
  }
  let created: string | undefined;
  try {
    created = createDataDir(dataDir);
    const lock = lockDataDir(dataDir);
    return {
      release: () => lock.release(),
      abandon() {
        // Removed while still locked, so no other start can begin in between.
        try {
          if (created !== undefined) rmSync(created, { recursive: true, force: true });
          else for (const entry of readdirSync(dataDir)) if (!entriesBefore?.has(entry)) rmSync(join(dataDir, entry), { recursive: true, force: true });
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    if (created !== undefined) rmSync(created, { recursive: true, force: true });
    if (isHooklineError(error)) throw error;
    throw dataDirError(dataDir, error as NodeJS.ErrnoException);
  }
}

/**
 * Creates `dataDir` and its missing parents; returns the first directory it made, if any.
 * @throws {HooklineError} `HOOKLINE_ERR_STARTUP` naming the setting, its value and what to do
 */
export function createDataDir(dataDir: string): string | undefined {
  try {
    return makeDirectories(dataDir);
  } catch (error) {
    throw dataDirError(dataDir, error as NodeJS.ErrnoException);
  }
}

/**
 * `mkdir -p`, one level at a time from the nearest existing ancestor, returning the first directory
 * it made (as `mkdirSync(…, { recursive: true })` does). Node 20's recursive mkdirSync spins forever
 * when mkdir answers ENOENT under a parent that exists (any path under /proc); made one level at a
 * time, that answer is an error like any other.
 */
function makeDirectories(dataDir: string): string | undefined {
  const missing: string[] = [];
  for (let current = resolve(dataDir); !existsSync(current) && dirname(current) !== current; current = dirname(current)) missing.unshift(current);
  let created: string | undefined;
  try {
    for (const directory of missing) {
      try {
        mkdirSync(directory);
      } catch (error) {
        // Made by another process meanwhile: as good as made here.
        if ((error as NodeJS.ErrnoException).code === 'EEXIST' && isDirectory(directory)) continue;
        throw error;
      }
      created ??= directory;
    }
  } catch (error) {
    if (created !== undefined) rmSync(created, { recursive: true, force: true });
    throw error;
  }
  return created;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function dataDirError(dataDir: string, error: NodeJS.ErrnoException): HooklineError {
  const setting = `HOOKLINE_DATA_DIR=${dataDir}`;
  const file = error.code === 'ENOTDIR' || error.code === 'EEXIST' ? fileOnPath(dataDir) : null;
  const explanation = file
    ? `${file} is a file, not a directory; set HOOKLINE_DATA_DIR to a directory (it is created if missing)`
    : error.code === 'EACCES' || error.code === 'EPERM'
      ? `cannot be written by user ${currentUser()} (${error.code}); give that user write permission on it (chown or chmod) or choose another HOOKLINE_DATA_DIR`
      : error.code === 'EROFS'
        ? 'is on a read-only filesystem; choose a directory on a writable one'
        : error.code === 'ENOSPC'
          ? 'is on a full disk; free space or choose another HOOKLINE_DATA_DIR'
          : error.code === 'ENOENT' && error.path !== undefined && isDirectory(dirname(error.path))
            ? `cannot be created or written: ${dirname(error.path)} exists but refused to hold ${error.path} (ENOENT), as virtual filesystems such as /proc do; choose a HOOKLINE_DATA_DIR on a disk`
            : `cannot be created or written (${error.code ?? error.message}); choose another HOOKLINE_DATA_DIR`;
  return new HooklineError('HOOKLINE_ERR_STARTUP', `${setting} ${file ? `cannot be used: ${explanation}` : explanation}`, { cause: error, details: [{ path: 'HOOKLINE_DATA_DIR', message: explanation }] });
}

/** The part of `path` that exists and is not a directory (the path itself, or one of its parents). */
function fileOnPath(path: string): string | null {
  for (let current = resolve(path); ; current = dirname(current)) {
    try {
      if (!statSync(current).isDirectory()) return current;
    } catch {
      // missing, or itself under a file: look further up
    }
    if (dirname(current) === current) return null;
  }
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'unknown');
  }
}
