// Regenerates the Mermaid state diagrams in docs/internals.md ("State diagrams") from the machine
// definitions (run by `npm run diagrams` after the build). test/unit/diagram.test.ts fails while they
// are stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { updateReadmeDiagrams } from '../dist/diagram/index.js';

const page = new URL('../docs/internals.md', import.meta.url);
const before = readFileSync(page, 'utf8');
const after = updateReadmeDiagrams(before);
if (after === before) {
  console.log('docs/internals.md: the state diagrams are up to date');
} else {
  writeFileSync(page, after);
  console.log('docs/internals.md: the state diagrams were regenerated from src/machines');
}
