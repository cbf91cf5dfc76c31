// Module hooks that let plain Node (20.19+, no type stripping) run the nemesis's TypeScript and the
// repository's own TypeScript it imports (test/helpers, src): a `.ts` file is compiled by esbuild's
// transform (types dropped, nothing bundled) when it is loaded, and the `./x.js` specifiers the
// sources use, as tsc's NodeNext wants, resolve to `./x.ts` where no `.js` exists. Each file keeps
// its own URL, so paths the helpers derive from `import.meta.url` stay right. Registered by run.mjs.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const fromTypeScript = context.parentURL?.endsWith('.ts') === true;
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !fromTypeScript || !specifier.startsWith('.') || !specifier.endsWith('.js')) throw error;
    return nextResolve(`${specifier.slice(0, -'.js'.length)}.ts`, context);
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const path = fileURLToPath(url);
  const { code } = await transform(await readFile(path, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20', sourcefile: path, sourcemap: 'inline' });
  return { format: 'module', source: code, shortCircuit: true };
}
