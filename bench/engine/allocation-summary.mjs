#!/usr/bin/env node
// Sums a .heapprofile of bench/engine/allocation-sampler.mjs by allocating function, per delivery.
//   node bench/engine/allocation-summary.mjs <file.heapprofile> <deliveries> [rows]
import { readFileSync } from 'node:fs';

const [file, deliveriesArg, rowsArg] = process.argv.slice(2);
if (!file || !deliveriesArg) {
  console.error('usage: node bench/engine/allocation-summary.mjs <file.heapprofile> <deliveries> [rows]');
  process.exit(2);
}
const deliveries = Number(deliveriesArg);
const rows = Number(rowsArg ?? 25);
const { head } = JSON.parse(readFileSync(file, 'utf8'));
const self = new Map();
const inclusive = new Map();
let total = 0;
const nameOf = ({ functionName, url, lineNumber }) => `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules\/)?/, '')}:${lineNumber + 1}`;
// Iterative walk: each frame's own bytes, and its bytes counted once for every distinct frame above it.
const stack = [{ node: head, above: new Set() }];
while (stack.length > 0) {
  const { node, above } = stack.pop();
  const name = nameOf(node.callFrame);
  const frames = new Set(above).add(name);
  total += node.selfSize;
  self.set(name, (self.get(name) ?? 0) + node.selfSize);
  for (const frame of frames) inclusive.set(frame, (inclusive.get(frame) ?? 0) + node.selfSize);
  for (const child of node.children) stack.push({ node: child, above: frames });
}
const table = (sizes) =>
  [...sizes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, rows)
    .map(([name, bytes]) => `${((bytes / total) * 100).toFixed(1).padStart(5)}%  ${(bytes / deliveries / 1024).toFixed(2).padStart(6)} KB  ${name}`)
    .join('\n');
console.log(`sampled ${(total / 1e6).toFixed(1)} MB in all, ${(total / deliveries / 1024).toFixed(1)} KB per delivery (${deliveries} deliveries)`);
console.log(`--- by allocating function (self)\n${table(self)}`);
console.log(`--- with what it calls (inclusive)\n${table(inclusive)}`);
