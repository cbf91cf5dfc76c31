import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import type { Database, Key, RootDatabase } from 'lmdb';

/**
 * Where each table keeps the record shapes its values are encoded with (lmdb-js
 * `sharedStructuresKey`). Without it, msgpackr wrote every value's field names into the value and
 * built the shape again on each write: a delivery head took 207 bytes instead of 80, and 800,000
 * puts of the hot path's records took 2.0–2.4 s of CPU instead of 1.3–1.5 s, with 1.5x the
 * scavenges. Values written before keep their inline shapes and read as they did; getRange and
 * getKeys never return this key.
 */
const SHARED_STRUCTURES_KEY = Symbol.for('hookline.structures');

/** Opens (creating it when the root is writable) the named table of msgpack-encoded records. */
export function openTable<V, K extends Key>(root: RootDatabase, name: string): Database<V, K> {
  return root.openDB<V, K>({ name, sharedStructuresKey: SHARED_STRUCTURES_KEY });
}

/**
 * Opens the LMDB environment a node wrote in `dataDir` from another process (a tool beside a
 * running node, or after it), never creating one.
 * @throws {Error} with what to do when the directory holds no Hookline data.
 */
export function openExistingData(dataDir: string, { readOnly }: { readOnly: boolean }): RootDatabase {
  if (!existsSync(join(dataDir, 'data.mdb'))) {
    throw new Error(`no Hookline data in ${dataDir}: point --data-dir (or HOOKLINE_DATA_DIR) at the node's data directory`);
  }
  try {
    // noSubdir: false, or lmdb-js takes a directory named like `hookline.d` for a file.
    return open({ path: dataDir, readOnly, noSubdir: false });
  } catch (error) {
    throw new Error(`cannot open ${dataDir} as Hookline data (${(error as Error).message}): point --data-dir (or HOOKLINE_DATA_DIR) at the node's data directory`, { cause: error });
  }
}
