// Sums a `perf script` dump of a serve process (recorded by `BENCH_PERF_DIR`, see bench/lib.mjs) into
// where its CPU went. perf samples CPU time (cpu-clock), not wall time as V8's --cpu-prof does, and
// sees the kernel: on two busy cores the V8 profile charges a socket write with the time the core
// spent on the process it woke, and cannot tell a page fault or an fdatasync from the JS around it.
//
//   node bench/engine/perf-summary.mjs <perf-script.txt> [rows]
//
// Prints: the share of each thread (the main thread, libuv's pool where lmdb-js commits, V8's
// helpers); the kernel's share by what entered it (the libc call, a page fault, an interrupt); and
// the main thread by the first JavaScript frame of each sample, per module and per function, with
// whatever native or kernel code ran beneath it charged to it.
import { readFileSync } from 'node:fs';

const [file, rowsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/engine/perf-summary.mjs <perf-script.txt> [rows]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 25);

/** One sample: its thread id and frames, leaf first, each as `{ symbol, kernel }`. */
function parse(text) {
  const samples = [];
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((line) => line.trim() !== '');
    if (lines.length < 2) continue;
    const tid = lines[0].trim().split(/\s+/)[1];
    const frames = lines.slice(1).map((line) => {
      const parts = line.trim().split(/\s+/);
      const symbol = parts.slice(1, -1).join(' ').replace(/\+0x[0-9a-f]+$/, '');
      return { symbol, kernel: line.includes('[kernel.kallsyms]') };
    });
    samples.push({ tid, frames });
  }
  return samples;
}

function tally(map, key) {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function print(title, map, total) {
  console.log(`\n${title}`);
  for (const [key, count] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${((100 * count) / total).toFixed(1).padStart(6)}%  ${key}`);
}

/** What entered the kernel: a page fault, an interrupt, or the libc call below the kernel frames. */
function kernelEntry(frames) {
  const kernelSymbols = frames.filter((frame) => frame.kernel).map((frame) => frame.symbol);
  if (kernelSymbols.includes('asm_exc_page_fault')) return 'page fault';
  const interrupt = kernelSymbols.find((symbol) => /^asm_(common_interrupt|sysvec_)/.test(symbol));
  if (interrupt) return `interrupt (${interrupt})`;
  return frames.find((frame) => !frame.kernel)?.symbol ?? '(kernel thread)';
}

/** V8's garbage collector, by the names on a stack (not a bare "Heap": the compiler's JSHeapBroker has it). */
const GC_FRAMES = /Scaveng|Marking|MarkCompact|Sweeper|MinorMC|Heap::/;

/** What a thread other than the main one was doing in a sample, from the names on its stack. */
function threadKind(names) {
  if (/mdb_|lmdb|WriteWorker/.test(names)) return 'lmdb-js write thread (libuv pool): commits, fdatasync';
  if (/node::ThreadPoolWork|uv__work/.test(names)) return 'libuv pool, other work';
  if (GC_FRAMES.test(names)) return 'V8 helper threads: GC';
  if (/Compil|compiler|Turbofan|Maglev/.test(names)) return 'V8 helper threads: compiler';
  return 'other threads';
}

/** Labels of main-thread samples without a JS frame, in place of a module. */
const NO_JS = { gc: '(no JS frame: GC)', loop: '(no JS frame: the event loop, socket reads, native callbacks)', other: '(no JS frame: other)' };

/** The layer a module belongs to, for the coarsest view of the main thread. */
function layerOf(module) {
  if (module.startsWith('dist/')) return 'Hookline (dist/)';
  if (/^(lmdb|msgpackr|ordered-binary)$/.test(module)) return 'storage: lmdb-js, msgpackr, ordered-binary';
  // undici parses answers with llhttp compiled to wasm.
  if (module === 'undici' || module.startsWith('wasm-')) return 'outbound HTTP: undici';
  if (/^(fastify|find-my-way|secure-json-parse|fast-json-stringify|avvio|light-my-request|@fastify\/.*|fast-uri|ajv|pino.*|zod)$/.test(module)) return 'inbound API: fastify and its parsers, zod, pino';
  if (/^node:(internal\/streams|_http|net|internal\/stream_base|internal\/http)/.test(module) || module === NO_JS.loop) return "Node's sockets, HTTP server and event loop";
  if (module.startsWith('@nats-io/')) return 'NATS client: nats.js';
  if (module === 'prom-client') return 'metrics: prom-client';
  if (module === NO_JS.gc) return 'GC on the main thread';
  if (module.startsWith('node:')) return "Node's other modules (promises, timers, crypto, buffers)";
  return 'other';
}

/** A JS frame's file as a short module name: a package, a file of dist/, or Node's own. */
function moduleOf(location) {
  const packageMatch = /node_modules\/(?:.*\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//.exec(location);
  if (packageMatch) return packageMatch[1];
  const distMatch = /\/dist\/(\S+?)(?::\d+)*$/.exec(location);
  if (distMatch) return `dist/${distMatch[1]}`;
  const nodeMatch = /(node:\S+?)(?::\d+)*$/.exec(location);
  return nodeMatch ? nodeMatch[1] : location;
}

const samples = parse(readFileSync(file, 'utf8'));
if (samples.length === 0) {
  console.error(`${file}: no samples`);
  process.exit(1);
}
const threads = new Map();
for (const sample of samples) tally(threads, sample.tid);
// The main thread's id is the process id, and it has the most samples.
const mainTid = [...threads].sort((a, b) => b[1] - a[1])[0][0];

const byThread = new Map();
const kernel = new Map();
const modules = new Map();
const layers = new Map();
const functions = new Map();
let kernelSamples = 0;
let mainSamples = 0;
for (const { tid, frames } of samples) {
  const names = frames.map((frame) => frame.symbol).join(' ');
  tally(byThread, tid === mainTid ? 'main thread' : threadKind(names));
  if (frames[0]?.kernel) {
    kernelSamples++;
    tally(kernel, kernelEntry(frames));
  }
  if (tid !== mainTid) continue;
  mainSamples++;
  const js = frames.find((frame) => frame.symbol.startsWith('JS:'));
  const location = js?.symbol.replace(/^JS:[*~^]?/, '');
  const module = location !== undefined ? moduleOf(location) : GC_FRAMES.test(names) ? NO_JS.gc : /uv__io_poll|uv_run/.test(names) ? NO_JS.loop : NO_JS.other;
  tally(modules, module);
  tally(layers, layerOf(module));
  tally(functions, location === undefined ? module : location.replace(/file:\/\/\S*?\/(dist|node_modules)\//, '$1/').replace(/ \/\S*?\/(dist|node_modules)\//, ' $1/') + (frames[0].kernel ? ' [in the kernel]' : ''));
}

console.log(`${samples.length} samples; main thread ${mainTid}; in the kernel ${((100 * kernelSamples) / samples.length).toFixed(1)}%`);
print('Threads (% of all samples)', byThread, samples.length);
print('Kernel, by what entered it (% of all samples)', kernel, samples.length);
print(`Main thread by layer (% of its ${mainSamples} samples)`, layers, mainSamples);
print(`Main thread by module of the first JS frame (% of its ${mainSamples} samples)`, modules, mainSamples);
print('Main thread by first JS function (% of its samples)', functions, mainSamples);
