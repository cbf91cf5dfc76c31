import { createRequire } from 'node:module';

/**
 * Hands the free pages inside glibc's heaps back to the system (`malloc_trim(0)`).
 *
 * The native buffers a burst allocates (msgpackr's encode buffers, lmdb-js's write instructions,
 * Node's Buffer pool, socket reads) come from glibc's malloc. Once freed they stay in its heap: glibc
 * only shrinks the top of a heap, and what a burst leaves is free runs between a few chunks still in
 * use. Measured with 100,000 deliveries retrying, after the idle compacting GC: `[heap]` held 94 MB of
 * RSS against 6 MB after a restart. `malloc_trim(0)` walks every arena and `madvise`s each free page
 * away, wherever it lies; nothing in Node reaches it, so it is called through koffi (an FFI with
 * prebuilt binaries in the package, an optional dependency).
 *
 * Only glibc has it. On musl, another OS, or where koffi did not install or load, there is nothing
 * to call: the trim is skipped, and `onUnavailable` told why, once.
 */

/** Gives glibc's free pages back; true when glibc says it released memory. */
export type NativeHeapTrim = () => boolean;

export interface NativeHeapTrimOptions {
  /** Told once, at the first trim, why there is no trim here (a debug log line). */
  onUnavailable?: (reason: string) => void;
}

/**
 * A trim that binds `malloc_trim` at its first call (koffi is loaded then, never at import, and never
 * where the trim is not used); later calls reuse the binding, or do nothing where there was none.
 */
export function nativeHeapTrim(options: NativeHeapTrimOptions = {}): NativeHeapTrim {
  let trim: NativeHeapTrim | undefined;
  return () => {
    if (trim === undefined) {
      const bound = bindMallocTrim();
      if (typeof bound === 'string') options.onUnavailable?.(bound);
      trim = typeof bound === 'string' ? () => false : bound;
    }
    return trim();
  };
}

/** `malloc_trim(0)` bound through koffi, or why it cannot be. */
function bindMallocTrim(): NativeHeapTrim | string {
  if (process.platform !== 'linux') return `malloc_trim is glibc's; this is ${process.platform}`;
  // On musl (Alpine) there is no libc.so.6, or no malloc_trim in it: the load or the lookup throws.
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const mallocTrim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)');
    return () => mallocTrim(0) === 1;
  } catch (error) {
    // Only the first line: a missing module's message goes on with its require stack.
    return `koffi could not bind malloc_trim: ${String((error as Error).message).split('\n')[0]}`;
  }
}

/** The part of koffi's API used here: koffi is optional, so the build must not need its types. */
interface Koffi {
  load(path: string): { func(signature: string): (...args: number[]) => number };
}
