import type { GraphEdge, MachineGraph } from './graph.js';
import { edgeLabel } from './graph.js';

/** A path through a machine to mark on its diagram (`hookline inspect --format mermaid`). */
export interface PathHighlight {
  /** How often each state was entered. */
  readonly visited: ReadonlyMap<string, number>;
  /** How often each edge of `graph.edges` was taken (by identity). */
  readonly taken: ReadonlyMap<GraphEdge, number>;
  /** How often the path entered the initial state from `[*]` (the delivery's creation). */
  readonly created: number;
}

const INDENT = '    ';

/**
 * A Mermaid `stateDiagram-v2`: the initial arrow, one line per edge in definition order labelled
 * `EVENT [guard] / actions` (`always` for eventless ones), an arrow out of each final state, and
 * transient states dashed. With a highlight, entered states are filled and taken edges carry `×n`.
 */
export function renderMermaid(graph: MachineGraph, highlight?: PathHighlight): string {
  const lines = ['stateDiagram-v2', `${INDENT}%% ${graph.title}: generated from the machine definition by \`hookline diagram\``];
  // A label needs the colon: Mermaid would read `pending ×1` as a state name and refuse the diagram.
  lines.push(`${INDENT}[*] --> ${graph.initial}${highlight?.created ? `: created ×${highlight.created}` : ''}`);
  for (const edge of graph.edges) {
    const count = highlight?.taken.get(edge);
    lines.push(`${INDENT}${edge.from} --> ${edge.to}: ${edgeLabel(edge)}${count ? ` ×${count}` : ''}`);
  }
  for (const final of graph.finals) lines.push(`${INDENT}${final} --> [*]`);
  if (graph.transients.length > 0) {
    lines.push(`${INDENT}classDef transient stroke-dasharray: 4 4`);
    lines.push(`${INDENT}class ${graph.transients.join(',')} transient`);
  }
  if (highlight) {
    const entered = graph.states.filter((state) => (highlight.visited.get(state) ?? 0) > 0);
    if (entered.length > 0) {
      lines.push(`${INDENT}classDef visited fill:#dff5df,stroke:#1a7f37,stroke-width:2px`);
      lines.push(`${INDENT}class ${entered.join(',')} visited`);
    }
  }
  return `${lines.join('\n')}\n`;
}
