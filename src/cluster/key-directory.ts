/**
 * API keys in a cluster's directory, the KV bucket `<stream>_directory` every node mirrors: one
 * entry `project.<id>` per project (its record as JSON) and one entry `key.<sha256 hex of the key>`
 * per key, its value the project id. A node learns of a key added or deleted here through its watch
 * of the bucket and mirrors the change (`ClusterNode`).
 */
import { JetStreamApiCodes, jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { HooklineError } from '../errors.js';
import type { KeyRevocation } from '../store/key-revocation.js';

const KEY_PREFIX = 'key.';
const PROJECT_PREFIX = 'project.';
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The directory bucket of the cluster whose events stream is `natsStream`. */
export function directoryBucket(natsStream: string): string {
  return `${natsStream}_directory`;
}

/** The directory entry of a project, by its id; its value is the project's record (JSON). */
export function directoryProjectEntry(projectId: string): string {
  return `${PROJECT_PREFIX}${projectId}`;
}

/** The project id a directory entry names, or null when the entry is not a project's. */
export function projectIdOfEntry(entry: string): string | null {
  return entry.startsWith(PROJECT_PREFIX) ? entry.slice(PROJECT_PREFIX.length) : null;
}

/** The directory entry of an API key, by the key's SHA-256 hash. */
export function directoryKeyEntry(apiKeyHash: string): string {
  return `${KEY_PREFIX}${apiKeyHash}`;
}

/** The key hash a directory entry names, or null when the entry is not an API key's. */
export function apiKeyHashOfEntry(entry: string): string | null {
  return entry.startsWith(KEY_PREFIX) ? entry.slice(KEY_PREFIX.length) : null;
}

/**
 * The directory of a running (or once run) cluster, opened without creating it: a bucket that does
 * not exist means the wrong NATS or stream name, not a cluster to set up.
 * @throws {HooklineError} `HOOKLINE_ERR_NOT_FOUND` naming the bucket and the setting to check.
 */
export async function openDirectory(connection: NatsConnection, natsStream: string): Promise<KV> {
  const bucket = directoryBucket(natsStream);
  const manager = await jetstreamManager(connection);
  const exists = await manager.streams.info(`KV_${bucket}`).then(
    () => true,
    (error: unknown) => {
      if ((error as { code?: unknown }).code === JetStreamApiCodes.StreamNotFound) return false;
      throw error;
    },
  );
  if (!exists) throw new HooklineError('HOOKLINE_ERR_NOT_FOUND', `this NATS has no cluster directory (KV bucket ${bucket}): check HOOKLINE_NATS_URL and HOOKLINE_NATS_STREAM, which must be the cluster nodes' own`);
  return new Kvm(connection).open(bucket);
}

/** How many keys of the directory open the project: one pass over the bucket's key entries. */
export async function countDirectoryKeys(directory: KV, projectId: string): Promise<number> {
  let keys = 0;
  // The bucket keeps one version per entry, so its history is the current entries (deleted ones as markers).
  for await (const entry of await directory.history({ key: `${KEY_PREFIX}>` })) {
    if (entry.operation === 'PUT' && decoder.decode(entry.value) === projectId) keys++;
  }
  return keys;
}

/**
 * Deletes the key whose SHA-256 hash is `apiKeyHash` from the directory, unless it is its project's
 * last and `allowLastKey` is false. The delete is conditional on the entry read, so a key re-added
 * meanwhile is not taken with it. The count and the delete are not one transaction (a KV has
 * none): two revocations at the same instant could take a project's last two keys.
 */
export async function revokeDirectoryKey(directory: KV, apiKeyHash: string, { allowLastKey }: { allowLastKey: boolean }): Promise<KeyRevocation> {
  const entryName = directoryKeyEntry(apiKeyHash);
  const entry = await directory.get(entryName);
  if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return { outcome: 'unknown' };
  const projectId = decoder.decode(entry.value);
  const keys = await countDirectoryKeys(directory, projectId);
  if (keys <= 1 && !allowLastKey) return { outcome: 'last_key', projectId };
  await directory.delete(entryName, { previousSeq: entry.revision });
  return { outcome: 'revoked', projectId, keysLeft: Math.max(0, keys - 1) };
}

export type DirectoryKeyAddition = { readonly outcome: 'added' } | { readonly outcome: 'unknown_project' };

/**
 * Adds the key whose SHA-256 hash is `apiKeyHash` to the directory's project `projectId`, which must
 * exist there. Every node mirrors it through its watch, and authenticates it before that by reading
 * the directory (`ClusterNode.authenticate`). The entry is created, never overwritten: a hash that
 * is in the directory already stays with its project.
 * @throws when the entry exists (the key is some project's already).
 */
export async function addDirectoryKey(directory: KV, projectId: string, apiKeyHash: string): Promise<DirectoryKeyAddition> {
  const project = await directory.get(directoryProjectEntry(projectId));
  if (!project || project.operation !== 'PUT' || project.value.length === 0) return { outcome: 'unknown_project' };
  await directory.create(directoryKeyEntry(apiKeyHash), encoder.encode(projectId));
  return { outcome: 'added' };
}
