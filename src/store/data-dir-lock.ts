import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import nativeFs from 'fs-native-extensions';
import { HooklineError } from '../errors.js';

/** The lock file inside a data directory; it also holds the owner's pid, for the refusal message. */
const LOCK_FILE_NAME = 'hookline.lock';

export interface DataDirLock {
  /** Unlocks and closes the lock file (the kernel does the same when the process dies). */
  release(): void;
}

/**
 * Makes this process the one owner of `dataDir` (which must exist) for as long as it lives.
 *
 * LMDB lets any number of processes open one environment, so two nodes on one directory would both
 * resume and deliver the same deliveries. The guard is an exclusive lock on `hookline.lock` taken
 * with fcntl(F_OFD_SETLK) (flock on macOS), through fs-native-extensions, which ships prebuilt
 * binaries (nothing is compiled at install). Chosen over a pid file, which a kill -9 leaves behind
 * (a stale pid can even name a live, unrelated process), and over an abstract unix socket, which is
 * Linux-only and per network namespace (two containers sharing a volume would not see each other's):
 * the kernel holds the lock on the file itself and drops it when the process dies however it dies,
 * so a stale lock never blocks a restart. An open-file-description lock is also untouched by LMDB's
 * own POSIX locks on lock.mdb, which a classic fcntl lock would share per process.
 *
 * The file is never deleted, not even on release: deleting it would let a process that opened the
 * old file lock it while another locks a new one. Read-only tools (`hookline replay`) do not lock.
 *
 * @throws {HooklineError} `HOOKLINE_ERR_DATA_DIR_IN_USE` when another process holds the directory.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE_NAME);
  for (;;) {
    const fd = openSync(path, 'a+');
    let locked = false;
    try {
      locked = nativeFs.tryLock(fd);
    } finally {
      if (!locked) closeSync(fd);
    }
    if (!locked) {
      throw new HooklineError('HOOKLINE_ERR_DATA_DIR_IN_USE', `data directory ${dataDir} is in use by process ${ownerPid(path) ?? '(unknown)'}; stop that process first, or give this one another HOOKLINE_DATA_DIR`);
    }
    // The file was replaced after it was opened (someone deleted it by hand and another start made
    // a new one): a lock on the old file guards nothing, so take the lock of the file there now.
    if (!sameFile(fd, path)) {
      nativeFs.unlock(fd);
      closeSync(fd);
      continue;
    }
    try {
      ftruncateSync(fd, 0);
      writeSync(fd, `${process.pid}\n`, 0);
    } catch (error) {
      // e.g. ENOSPC: no lock may outlive a failed claim, or this process would refuse itself later.
      nativeFs.unlock(fd);
      closeSync(fd);
      throw error;
    }
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        nativeFs.unlock(fd);
        closeSync(fd);
      },
    };
  }
}

function sameFile(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = statSync(path);
    return open.ino === named.ino && open.dev === named.dev;
  } catch {
    return false;
  }
}

/** The pid the owner wrote; null in the instant between its lock and its write. */
function ownerPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
