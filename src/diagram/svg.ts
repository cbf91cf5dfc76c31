import type { MachineGraph } from './graph.js';
import { edgeLabel } from './graph.js';
import type { Point } from './layout.js';
import { LABEL_FONT_SIZE, LABEL_LINE_HEIGHT, NODE_FONT_SIZE, labelBox, layoutDiagram } from './layout.js';

const MARGIN = 24;

const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * A standalone SVG of the machine, laid out by layout.ts (no Graphviz needed). Every state is a
 * `<g class="state" data-state>` and every transition a `<g class="edge" data-from data-to
 * data-event>` (event `always` for an eventless one) whose `<title>` is the full label, so the
 * drawing can be checked against the machine by a program as well as by eye.
 */
export function renderSvg(graph: MachineGraph): string {
  const layout = layoutDiagram(graph);
  const marker = `arrow-${graph.id}`;
  const bounds: Point[] = [layout.start];
  for (const node of layout.nodes.values()) {
    bounds.push({ x: node.x - node.width / 2, y: node.y - node.height / 2 }, { x: node.x + node.width / 2, y: node.y + node.height / 2 });
  }

  const edges: string[] = [];
  const labels: string[] = [];
  for (const route of layout.routes) {
    bounds.push(...route.points);
    const { x: left, y: top, width, height } = labelBox(route.label, route.lines);
    bounds.push({ x: left, y: top }, { x: left + width, y: top + height });
    const attributes = `data-from="${escapeXml(route.edge.from)}" data-to="${escapeXml(route.edge.to)}" data-event="${escapeXml(route.edge.event ?? 'always')}"`;
    edges.push(
      `  <g class="edge" ${attributes}>\n    <title>${escapeXml(`${route.edge.from} → ${route.edge.to}: ${edgeLabel(route.edge)}`)}</title>\n` +
        `    <path d="${route.path}" fill="none" stroke="#444" stroke-width="1.3" marker-end="url(#${marker})"/>\n  </g>`,
    );
    const spans = route.lines
      .map((line, index) => {
        const y = top + 2 + LABEL_LINE_HEIGHT * (index + 1) - 3;
        const style = index === 0 ? ' font-weight="bold"' : ` fill="#555" font-size="${LABEL_FONT_SIZE - 1}"`;
        return `    <text x="${n(route.label.x)}" y="${n(y)}" text-anchor="${route.label.anchor}"${style}>${escapeXml(line)}</text>`;
      })
      .join('\n');
    labels.push(
      `  <g class="label" ${attributes}>\n    <rect x="${n(left)}" y="${n(top)}" width="${n(width)}" height="${n(height)}" rx="3" fill="#ffffff" fill-opacity="0.9"/>\n${spans}\n  </g>`,
    );
  }

  const states: string[] = [];
  for (const state of graph.states) {
    const node = layout.nodes.get(state)!;
    const x = node.x - node.width / 2;
    const y = node.y - node.height / 2;
    const transient = graph.transients.includes(node.state);
    const final = graph.finals.includes(node.state);
    const box = `<rect x="${n(x)}" y="${n(y)}" width="${n(node.width)}" height="${n(node.height)}" rx="12" fill="${transient ? '#fafafa' : '#eef4ff'}" stroke="#2b4c7e" stroke-width="1.5"${transient ? ' stroke-dasharray="5 4"' : ''}/>`;
    const inner = final ? `\n    <rect x="${n(x + 4)}" y="${n(y + 4)}" width="${n(node.width - 8)}" height="${n(node.height - 8)}" rx="9" fill="none" stroke="#2b4c7e"/>` : '';
    states.push(
      `  <g class="state" data-state="${escapeXml(node.state)}">\n    ${box}${inner}\n` +
        `    <text x="${n(node.x)}" y="${n(node.y + NODE_FONT_SIZE / 2 - 2)}" text-anchor="middle" font-size="${NODE_FONT_SIZE}">${escapeXml(node.state)}</text>\n  </g>`,
    );
  }

  const initial = layout.nodes.get(graph.initial)!;
  const start = `  <g class="initial">\n    <circle cx="${n(layout.start.x)}" cy="${n(layout.start.y)}" r="7" fill="#222"/>\n` +
    `    <path d="M${n(layout.start.x)},${n(layout.start.y + 7)} L${n(initial.x)},${n(initial.y - initial.height / 2)}" stroke="#444" stroke-width="1.3" marker-end="url(#${marker})"/>\n  </g>`;

  const minX = Math.min(...bounds.map((p) => p.x)) - MARGIN;
  const minY = Math.min(...bounds.map((p) => p.y)) - MARGIN - 20;
  const width = Math.max(...bounds.map((p) => p.x)) + MARGIN - minX;
  const height = Math.max(...bounds.map((p) => p.y)) + MARGIN - minY;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="${n(minX)} ${n(minY)} ${n(width)} ${n(height)}" width="${Math.ceil(width)}" height="${Math.ceil(height)}" font-family="Helvetica, Arial, sans-serif" font-size="${LABEL_FONT_SIZE}">`,
    `  <title>${escapeXml(graph.title)}</title>`,
    `  <defs>\n    <marker id="${marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">\n      <path d="M0,0 L10,5 L0,10 z" fill="#444"/>\n    </marker>\n  </defs>`,
    `  <rect x="${n(minX)}" y="${n(minY)}" width="${n(width)}" height="${n(height)}" fill="#ffffff"/>`,
    `  <text x="${n(minX + MARGIN)}" y="${n(minY + MARGIN)}" font-size="${NODE_FONT_SIZE}" font-weight="bold">${escapeXml(graph.title)}</text>`,
    start,
    ...edges,
    ...states,
    ...labels,
    '</svg>',
    '',
  ].join('\n');
}

function n(value: number): string {
  return String(Math.round(value * 10) / 10);
}
