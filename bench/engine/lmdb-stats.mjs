// Diagnostic: what a Hookline LMDB data dir holds, per database (entries, pages, MB), read-only.
// Usage: node bench/engine/lmdb-stats.mjs <HOOKLINE_DATA_DIR>   (e.g. a dir kept with BENCH_KEEP=1)
import { open } from 'lmdb';

const root = open({ path: process.argv[2], readOnly: true });
const env = root.getStats();
console.log(`environment: ${(env.lastPageNumber * env.pageSize / 2 ** 20).toFixed(1)} MB used (${env.lastPageNumber} pages of ${env.pageSize} B)`);
for (const name of ['projects', 'api-keys', 'webhooks', 'events', 'deliveries', 'deliveries-by-status', 'rejected-events']) {
  const s = root.openDB({ name }).getStats();
  const pages = s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages;
  console.log(`${name.padEnd(22)} ${String(s.entryCount).padStart(8)} entries ${String(pages).padStart(7)} pages ${(pages * env.pageSize / 2 ** 20).toFixed(1).padStart(7)} MB`);
}
await root.close();
