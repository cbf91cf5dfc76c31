/**
 * Real envelopes as the fuzzer's bodies: the newest events a Hookline stored, so a team fuzzes its
 * receiver with its own payloads, byte for byte as Hookline sent them. `--corpus DIR` reads a node's
 * data directory through the read-only reader `hookline replay` uses; `--corpus URL` asks a running
 * Hookline's API (`GET /v1/events`) with the project's key.
 */
import { EventLogReader } from '../replay/event-log.js';
import type { HooklineClient } from '../sdk/client.js';

/** How many of the newest events make the corpus, from a directory or an API. */
export const CORPUS_EVENTS = 500;

/** At most `limit` envelopes of the project's newest events. @throws {Error} with what to do, when the directory or project is not there. */
export async function loadCorpus(dataDir: string, projectId: string, limit = CORPUS_EVENTS): Promise<Uint8Array[]> {
  const reader = EventLogReader.open(dataDir);
  try {
    if (!reader.hasProject(projectId)) throw new Error(`project "${projectId}" does not exist in ${dataDir}; check --project`);
    const events = reader.select({ projectId, from: 0 }).slice(-limit);
    const envelopes = events.flatMap((event) => reader.envelope(projectId, event.id) ?? []);
    if (envelopes.length === 0) throw new Error(`project "${projectId}" has no stored events in ${dataDir}: nothing to build a corpus from`);
    return envelopes;
  } finally {
    await reader.close();
  }
}

/**
 * At most `limit` envelopes of the key's project's newest events, oldest first as `loadCorpus` gives
 * them. The API's `body` is the envelope's exact text, so its UTF-8 bytes are the bytes Hookline
 * signs: `payload` re-serialised could differ from them.
 * @throws {HooklineApiError} when the API cannot be reached or refuses the key; {Error} when the project has no events.
 */
export async function loadApiCorpus(client: Pick<HooklineClient, 'listEvents'>, limit = CORPUS_EVENTS): Promise<Uint8Array[]> {
  const envelopes: Uint8Array[] = [];
  for await (const event of client.listEvents({ limit: Math.min(limit, 250) })) {
    envelopes.push(Buffer.from(event.body, 'utf8'));
    if (envelopes.length === limit) break;
  }
  if (envelopes.length === 0) throw new Error('the project of this key has no stored events: nothing to build a corpus from');
  return envelopes.reverse();
}
