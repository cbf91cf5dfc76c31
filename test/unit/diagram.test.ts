import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { AnyStateMachine } from 'xstate';
import { describe, expect, it } from 'vitest';
import { DIAGRAM_MACHINES, edgeLabel, machineGraph, renderDiagram, renderDot, renderMermaid, renderSvg, updateReadmeDiagrams } from '../../src/diagram/index.js';
import type { DiagramMachine, MachineGraph } from '../../src/diagram/index.js';
import { deliveryMachine, webhookConfigMachine } from '../../src/machines/index.js';

/**
 * The diagrams against the machines themselves: every state and transition the XState definition
 * declares (read from its config here, not from the compiled table the renderers use) must be in
 * each rendering, and nothing else; the copies in docs/internals.md must equal fresh renderings.
 */

interface ConfigEdge {
  from: string;
  to: string;
  event: string | null;
  guard: string | null;
}

type TransitionConfig = { target?: string; guard?: string };

function definitionOf(machine: AnyStateMachine): { states: string[]; initial: string; edges: ConfigEdge[] } {
  const config = machine.config as { initial: string; states: Record<string, { on?: Record<string, TransitionConfig | TransitionConfig[]>; always?: TransitionConfig | TransitionConfig[] }> };
  const edges: ConfigEdge[] = [];
  for (const [from, node] of Object.entries(config.states)) {
    for (const [event, spec] of Object.entries(node.on ?? {})) {
      for (const transition of [spec].flat()) edges.push({ from, to: transition.target ?? from, event, guard: transition.guard ?? null });
    }
    for (const transition of [node.always ?? []].flat()) edges.push({ from, to: transition.target ?? from, event: null, guard: transition.guard ?? null });
  }
  return { states: Object.keys(config.states), initial: config.initial, edges };
}

const MACHINES: Record<DiagramMachine, AnyStateMachine> = { delivery: deliveryMachine, webhook: webhookConfigMachine };
const key = (edge: ConfigEdge) => `${edge.from} -> ${edge.to} on ${edge.event ?? 'always'}${edge.guard ? ` [${edge.guard}]` : ''}`;
const sorted = (edges: ConfigEdge[]) => edges.map(key).sort();

function mermaidEdges(text: string): ConfigEdge[] {
  return [...text.matchAll(/^ {4}(\w+) --> (\w+): (\w+)(?: \[(\w+)\])?/gm)].map(([, from, to, event, guard]) => ({ from: from!, to: to!, event: event === 'always' ? null : event!, guard: guard ?? null }));
}

function dotEdges(text: string): ConfigEdge[] {
  return [...text.matchAll(/^ {2}"(\w+)" -> "(\w+)" \[label="(\w+)(?: \[(\w+)\])?/gm)].map(([, from, to, event, guard]) => ({ from: from!, to: to!, event: event === 'always' ? null : event!, guard: guard ?? null }));
}

function svgEdges(text: string, graph: MachineGraph): ConfigEdge[] {
  return [...text.matchAll(/<g class="edge" data-from="(\w+)" data-to="(\w+)" data-event="(\w+)">\s*<title>[^<]*?: (?:\w+)(?: \[(\w+)\])?/g)].map(([, from, to, event, guard]) => {
    expect(graph.states).toContain(from);
    return { from: from!, to: to!, event: event === 'always' ? null : event!, guard: guard ?? null };
  });
}

describe.each(DIAGRAM_MACHINES)('the %s diagram', (machine) => {
  const definition = definitionOf(MACHINES[machine]);
  const graph = machineGraph(machine);

  it('reads every state and transition of the definition, and nothing else', () => {
    expect(graph.states).toEqual(definition.states);
    expect(graph.initial).toBe(definition.initial);
    expect(sorted(graph.edges.map((edge) => ({ from: edge.from, to: edge.to, event: edge.event, guard: edge.guard ?? null })))).toEqual(sorted(definition.edges));
  });

  it('Mermaid lists every transition (with its guard) and the initial state', () => {
    const text = renderMermaid(graph);
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    expect(sorted(mermaidEdges(text))).toEqual(sorted(definition.edges));
    expect(text).toContain(`    [*] --> ${definition.initial}\n`);
    for (const state of definition.states) expect(text).toMatch(new RegExp(`\\b${state}\\b`));
    for (const edge of graph.edges) expect(text).toContain(`    ${edge.from} --> ${edge.to}: ${edgeLabel(edge)}\n`);
  });

  it('DOT lists every state and transition', () => {
    const text = renderDot(graph);
    expect(sorted(dotEdges(text))).toEqual(sorted(definition.edges));
    for (const state of definition.states) expect(text).toMatch(new RegExp(`^ {2}"${state}"( \\[.*\\])?;$`, 'm'));
    expect(text).toContain(`"__start" -> "${definition.initial}";`);
  });

  it('SVG draws every state and transition, deterministically', () => {
    const text = renderSvg(graph);
    expect(text).toBe(renderSvg(graph));
    expect([...text.matchAll(/<g class="state" data-state="(\w+)">/g)].map((match) => match[1])).toEqual(definition.states);
    expect(sorted(svgEdges(text, graph))).toEqual(sorted(definition.edges));
    expect(text).not.toMatch(/NaN|Infinity|undefined/);
    expect(text.match(/<g\b/g)?.length).toBe(text.match(/<\/g>/g)?.length);
  });

  it('`hookline diagram` renders the same as the renderers', () => {
    expect(renderDiagram(machine, 'mermaid')).toBe(renderMermaid(graph));
    expect(renderDiagram(machine, 'dot')).toBe(renderDot(graph));
    expect(renderDiagram(machine, 'svg')).toBe(renderSvg(graph));
  });
});

describe('the diagrams in docs/internals.md', () => {
  const readme = readFileSync(new URL('../../docs/internals.md', import.meta.url), 'utf8');

  it('are fresh renderings of the machines (run `npm run diagrams` after changing a machine)', () => {
    expect(readme).toBe(updateReadmeDiagrams(readme));
    for (const machine of DIAGRAM_MACHINES) expect(readme).toContain(`\`\`\`mermaid\n${renderMermaid(machineGraph(machine))}\`\`\``);
  });

  it('are refused without their markers', () => {
    expect(() => updateReadmeDiagrams('# no markers\n')).toThrow(/markers of the delivery diagram are missing/);
  });
});

describe('renderers on any machine graph', () => {
  const name = fc.stringMatching(/^[a-z][a-z_]{0,10}$/);
  const graphs: fc.Arbitrary<MachineGraph> = fc.uniqueArray(name, { minLength: 1, maxLength: 8 }).chain((states) =>
    fc.record({
      edges: fc.array(
        fc.record({
          from: fc.constantFrom(...states),
          to: fc.constantFrom(...states),
          event: fc.option(fc.constantFrom('GO', 'STOP', 'RETRY'), { nil: null }),
          guard: fc.option(fc.constantFrom('isReady', 'hasRoom'), { nil: undefined }),
          actions: fc.array(fc.constantFrom('record', 'notify'), { maxLength: 2 }),
        }),
        { maxLength: 14 },
      ),
      finals: fc.subarray(states),
      transients: fc.subarray(states),
    }).map(({ edges, finals, transients }) => ({
      id: 'generated',
      title: 'Generated',
      states,
      initial: states[0]!,
      finals,
      transients,
      edges: edges.map(({ guard, ...edge }) => (guard === undefined ? edge : { ...edge, guard })),
    })),
  );

  it('draw every state and edge, inside the canvas, without NaN', () => {
    fc.assert(
      fc.property(graphs, (graph) => {
        const mermaid = renderMermaid(graph);
        expect(mermaid.match(/ --> /g)?.length).toBe(graph.edges.length + 1 + graph.finals.length);
        expect(renderDot(graph).match(/ -> /g)?.length).toBe(graph.edges.length + 1);
        const svg = renderSvg(graph);
        expect(svg).not.toMatch(/NaN|Infinity|undefined/);
        expect(svg.match(/<g class="edge"/g)?.length ?? 0).toBe(graph.edges.length);
        expect(svg.match(/<g class="state"/g)?.length).toBe(graph.states.length);
        const [minX, minY, width, height] = /viewBox="([^"]+)"/.exec(svg)![1]!.split(' ').map(Number) as [number, number, number, number];
        for (const [, x, y, w, h] of svg.matchAll(/<rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)" rx="12"/g)) {
          expect(Number(x)).toBeGreaterThanOrEqual(minX);
          expect(Number(y)).toBeGreaterThanOrEqual(minY);
          expect(Number(x) + Number(w)).toBeLessThanOrEqual(minX + width + 0.01);
          expect(Number(y) + Number(h)).toBeLessThanOrEqual(minY + height + 0.01);
        }
      }),
      { seed: 20_261_122, numRuns: 200 },
    );
  });
});
