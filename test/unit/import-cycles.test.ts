import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * STYLE.md: no import cycles. A cycle of value imports makes a module run before what it imports
 * is initialised (an undefined at start-up, depending on which module is loaded first). Type-only
 * imports are erased from the build and are not counted.
 */

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** Each module's value imports (static, re-exports and dynamic `import()`), as absolute .ts paths. */
function valueImports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const entry of readdirSync(SRC, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    const specifiers = [
      ...[...text.matchAll(/^(?:import|export)\s+(?!type\s)[^'";]*?from\s+'(\.[^']+)'/gm)].map((match) => match[1]!),
      ...[...text.matchAll(/^import\s+'(\.[^']+)'/gm)].map((match) => match[1]!),
      ...[...text.matchAll(/import\('(\.[^']+)'\)/g)].map((match) => match[1]!),
    ];
    graph.set(file, specifiers.map((specifier) => path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts')));
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const trail: string[] = [];
  const visit = (module: string): void => {
    state.set(module, 'visiting');
    trail.push(module);
    for (const imported of graph.get(module) ?? []) {
      if (state.get(imported) === 'visiting') found.push([...trail.slice(trail.indexOf(imported)), imported].map((file) => path.relative(SRC, file)).join(' -> '));
      else if (!state.has(imported)) visit(imported);
    }
    trail.pop();
    state.set(module, 'done');
  };
  for (const module of graph.keys()) if (!state.has(module)) visit(module);
  return found;
}

describe('src/ imports', () => {
  it('has no cycle of value imports', () => {
    const graph = valueImports();
    expect(graph.size).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const a = path.join(SRC, 'a.ts');
    const b = path.join(SRC, 'b.ts');
    expect(cycles(new Map([[a, [b]], [b, [a]]]))).toEqual(['a.ts -> b.ts -> a.ts']);
  });
});
