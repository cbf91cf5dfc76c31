// Regenerates the Mermaid state diagrams in README.md from the machine definitions (run by
// `npm run diagrams` after the build). test/unit/diagram.test.ts fails while they are stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { updateReadmeDiagrams } from '../dist/diagram/index.js';

const readme = new URL('../README.md', import.meta.url);
const before = readFileSync(readme, 'utf8');
const after = updateReadmeDiagrams(before);
if (after === before) {
  console.log('README.md: the state diagrams are up to date');
} else {
  writeFileSync(readme, after);
  console.log('README.md: the state diagrams were regenerated from src/machines');
}
