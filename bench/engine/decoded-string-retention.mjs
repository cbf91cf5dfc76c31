// Diagnostic: heap kept alive by strings taken from records read back from LMDB (msgpackr). Writes
// 100,000 delivery-shaped records, reads them back and keeps only {id, eventId} of each, as
// ProjectActor.admit() does on restart; then the same with the two strings copied.
// Usage: node --expose-gc bench/engine/decoded-string-retention.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';

const dir = mkdtempSync(path.join(os.tmpdir(), 'hookline-retention-'));
const root = open({ path: dir });
const db = root.openDB({ name: 'deliveries' });
const N = 100_000;
const id = (prefix, i) => `${prefix}_01M80C3D44${String(i).padStart(16, '0')}`;
const record = (i) => ({
  id: id('dlv', i), eventId: id('evt', i), eventType: 'service.trigger.event', status: 'retrying', attempts: 1, roundAttempts: 1, roundSize: 2,
  nextAttemptAt: 1795313300827, createdAt: 1795309024388, updatedAt: 1795309024548,
  attemptLog: [{ attempt: 1, at: 1795309024474, statusCode: 500, durationMs: 72, error: 'HTTP 500', errorCode: 'http_status', responseBody: '' }],
  transitions: [{ from: null, to: 'pending', event: 'CREATED', at: 1 }, { from: 'pending', to: 'delivering', event: 'START_ATTEMPT', at: 2 }, { from: 'delivering', to: 'retrying', event: 'ATTEMPT_FAILED', at: 3 }],
});
try {
  await root.transaction(() => { for (let i = 0; i < N; i++) db.put(['default', id('dlv', i)], record(i)); });
  const heapUsed = () => { globalThis.gc(); globalThis.gc(); return process.memoryUsage().heapUsed; };
  const copy = (s) => Buffer.from(s, 'latin1').toString('latin1');
  for (const mode of ['as decoded', 'copied']) {
    const before = heapUsed();
    const kept = [];
    for (let i = 0; i < N; i++) {
      const r = db.get(['default', id('dlv', i)]);
      kept.push(mode === 'copied' ? { id: copy(r.id), eventId: copy(r.eventId) } : { id: r.id, eventId: r.eventId });
    }
    console.log(`${mode.padEnd(10)}: ${((heapUsed() - before) / N).toFixed(0)} bytes of heap per kept {id, eventId}`);
    kept.length = 0;
  }
} finally {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
}
