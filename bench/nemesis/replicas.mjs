#!/usr/bin/env node
// `npm run nemesis:replicas`: lets Node load the nemesis's TypeScript (ts-hooks.mjs) and compares a kept run's stream replicas (replicas-main.ts).
import { register } from 'node:module';
import { ensureBuilt } from '../../scripts/build.mjs';

try {
  const { built } = ensureBuilt();
  if (built) console.error('nemesis: dist/ was stale and is rebuilt');
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
}
process.setSourceMapsEnabled(true);
register('./ts-hooks.mjs', import.meta.url);
await import('./replicas-main.ts');
