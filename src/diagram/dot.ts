import type { MachineGraph } from './graph.js';
import { edgeLabel } from './graph.js';

const quote = (text: string): string => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * Graphviz DOT (`dot -Tsvg`): rounded boxes, a point for the start, double borders on final
 * states, dashed transient states, one edge per transition labelled like the Mermaid form.
 */
export function renderDot(graph: MachineGraph): string {
  const lines = [
    `digraph ${quote(graph.id)} {`,
    `  // ${graph.title}: generated from the machine definition by \`hookline diagram\``,
    '  rankdir=TB;',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
    '  "__start" [shape=point, width=0.15, label=""];',
  ];
  for (const state of graph.states) {
    const attributes: string[] = [];
    if (graph.finals.includes(state)) attributes.push('peripheries=2');
    if (graph.transients.includes(state)) attributes.push('style="rounded,dashed"');
    lines.push(`  ${quote(state)}${attributes.length > 0 ? ` [${attributes.join(', ')}]` : ''};`);
  }
  lines.push(`  "__start" -> ${quote(graph.initial)};`);
  for (const edge of graph.edges) {
    lines.push(`  ${quote(edge.from)} -> ${quote(edge.to)} [label=${quote(edgeLabel(edge))}];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
