// Preloaded into a serve process (`node --import`) by BENCH_ALLOC_PROFILE_DIR: samples allocations
// from start to SIGTERM, including the objects the GC has already collected, and writes a
// .heapprofile there. `node --heap-prof` keeps only what is still alive at exit, which says nothing
// of the allocation per event that the GC's share of the CPU comes from. Summed by
// bench/engine/allocation-summary.mjs.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

const dir = process.env.BENCH_ALLOC_PROFILE_DIR;
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
// One sample per 16 KB allocated on average (V8's default is 32 KB): enough for sites of 0.1%.
await session.post('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
// Before the server's own handler, which drains and exits: stopping the sampler is synchronous enough.
process.prependListener('SIGTERM', () => {
  session.post('HeapProfiler.stopSampling').then(({ profile }) => writeFileSync(path.join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(profile)));
});
