import { onTestFinished } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp dir; `remove()` deletes it and everything in it. */
export function makeTempDir(prefix = 'hookline-test-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A data directory for the nodes of one test (a restart reuses it), removed when the test finishes:
 * registered before any node starts, so it runs after each has closed.
 */
export function testDataDir(): string {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  return dir.path;
}
