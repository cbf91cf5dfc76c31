/**
 * Revoking an API key in a data directory, beside a running node or not. It takes no data-directory
 * lock: LMDB serialises writers of one environment across processes (its own lock file), and a
 * node reads `api-keys` in a read transaction renewed every event-loop turn, with no cache, so
 * the node refuses the key from its next request on. It opens the environment only to delete one
 * key, and creates nothing.
 */
import type { Database } from 'lmdb';
import { openExistingData, openTable } from './tables.js';

/** How many API keys (hashes in the `api-keys` table) open the project: a scan, for start-up and tools. */
export function countProjectKeys(apiKeys: Database<string, string>, projectId: string): number {
  let keys = 0;
  for (const { value } of apiKeys.getRange()) if (value === projectId) keys++;
  return keys;
}

export type KeyRevocation =
  | { readonly outcome: 'revoked'; readonly projectId: string; readonly keysLeft: number }
  | { readonly outcome: 'unknown' }
  /** Not revoked: the project would be left without a key and `allowLastKey` was false. */
  | { readonly outcome: 'last_key'; readonly projectId: string };

/**
 * Deletes the key whose SHA-256 hash is `apiKeyHash` from the store in `dataDir`; the check and the
 * delete are one write transaction, so two revocations cannot both take a project's last two keys.
 * @throws {Error} with what to do when the directory holds no Hookline data.
 */
export async function revokeApiKeyHash(dataDir: string, apiKeyHash: string, { allowLastKey }: { allowLastKey: boolean }): Promise<KeyRevocation> {
  const root = openExistingData(dataDir, { readOnly: false });
  try {
    const apiKeys = openTable<string, string>(root, 'api-keys');
    return await root.transaction((): KeyRevocation => {
      const projectId = apiKeys.get(apiKeyHash);
      if (typeof projectId !== 'string') return { outcome: 'unknown' };
      const keys = countProjectKeys(apiKeys, projectId);
      if (keys <= 1 && !allowLastKey) return { outcome: 'last_key', projectId };
      void apiKeys.remove(apiKeyHash);
      return { outcome: 'revoked', projectId, keysLeft: keys - 1 };
    });
  } finally {
    await root.close();
  }
}
