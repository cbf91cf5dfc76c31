// Starts one of the nemesis's TypeScript entry points: lets Node load TypeScript (ts-hooks.mjs),
// after building dist/ when it is stale and the entry needs it (the nodes run dist/cli/main.js).
import { register } from 'node:module';
import { ensureBuilt } from '../../scripts/build.mjs';

/** Imports `entry` (a path relative to this folder) once the hooks are in place. */
export async function launch(entry, { needsDist }) {
  if (needsDist) {
    try {
      const { built } = ensureBuilt();
      if (built) console.error('nemesis: dist/ was stale and is rebuilt');
    } catch (error) {
      console.error(error instanceof Error ? error.message : error);
      process.exit(2);
    }
  }
  process.setSourceMapsEnabled(true);
  register('./ts-hooks.mjs', import.meta.url);
  await import(new URL(entry, import.meta.url).href);
}
