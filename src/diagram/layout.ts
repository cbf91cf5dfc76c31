/**
 * A small deterministic layout for state diagrams, so `hookline diagram --format svg` needs no
 * Graphviz: states in ranks by breadth-first distance from the initial state (top to bottom,
 * definition order within a rank), and each edge routed by what it spans:
 * - a self-loop: a loop on the state's right side, one size larger per extra loop;
 * - neighbouring ranks: a quadratic curve, edges between the same two states fanned apart;
 * - one rank: an arc over (left to right) or under (right to left);
 * - two ranks or more: around the states in between, on the outer side, one lane per edge.
 * Only positions are computed here; svg.ts draws them.
 */
import type { GraphEdge, MachineGraph } from './graph.js';
import { edgeDetail, edgeTrigger } from './graph.js';

export interface Point {
  readonly x: number;
  readonly y: number;
}

/** A state's box, by its centre. */
export interface NodeBox extends Point {
  readonly state: string;
  readonly width: number;
  readonly height: number;
}

export interface EdgeRoute {
  readonly edge: GraphEdge;
  /** SVG path data, from the source's border to the target's. */
  readonly path: string;
  /** Every point the path uses, for the canvas bounds. */
  readonly points: readonly Point[];
  /** Where the label is anchored, and which of its sides is there. */
  readonly label: Point & { readonly anchor: 'start' | 'middle' | 'end' };
  readonly lines: readonly string[];
}

interface MutableRoute extends Omit<EdgeRoute, 'label'> {
  label: EdgeRoute['label'];
  /** Set on edges routed around the states they span. */
  lane?: { side: 'left' | 'right'; x: number };
}

export interface DiagramLayout {
  readonly nodes: ReadonlyMap<string, NodeBox>;
  readonly routes: readonly EdgeRoute[];
  readonly start: Point;
}

export const NODE_FONT_SIZE = 13;
export const LABEL_FONT_SIZE = 11;
const NODE_HEIGHT = 36;
const RANK_GAP = 160;
const NODE_GAP = 110;
const LANE_GAP = 34;

/** Text width estimate for a sans-serif font (no font metrics without a renderer). */
export function textWidth(text: string, fontSize: number): number {
  return text.length * fontSize * 0.62;
}

const round = (value: number): number => Math.round(value * 10) / 10;
const point = (x: number, y: number): Point => ({ x: round(x), y: round(y) });
const format = (p: Point): string => `${p.x},${p.y}`;

/** Rank of every state: breadth-first distance from the initial state; unreachable ones last. */
export function rankStates(graph: MachineGraph): Map<string, number> {
  const ranks = new Map<string, number>([[graph.initial, 0]]);
  const queue = [graph.initial];
  while (queue.length > 0) {
    const state = queue.shift()!;
    for (const edge of graph.edges) {
      if (edge.from !== state || ranks.has(edge.to)) continue;
      ranks.set(edge.to, ranks.get(state)! + 1);
      queue.push(edge.to);
    }
  }
  const last = Math.max(...ranks.values()) + 1;
  for (const state of graph.states) if (!ranks.has(state)) ranks.set(state, last);
  return ranks;
}

/** Where a line from the box's centre towards `toward` leaves the box. */
function exitPoint(box: NodeBox, toward: Point): Point {
  const dx = toward.x - box.x;
  const dy = toward.y - box.y;
  if (dx === 0 && dy === 0) return point(box.x, box.y);
  const scale = Math.min(dx === 0 ? Infinity : box.width / 2 / Math.abs(dx), dy === 0 ? Infinity : box.height / 2 / Math.abs(dy));
  return point(box.x + dx * scale, box.y + dy * scale);
}

export function layoutDiagram(graph: MachineGraph): DiagramLayout {
  const ranks = rankStates(graph);
  const byRank: string[][] = [];
  for (const state of graph.states) (byRank[ranks.get(state)!] ??= []).push(state);

  // Room on a state's right for its self-loops and their labels, so a neighbour never sits on them.
  const loopRoom = (state: string): number => {
    const loops = graph.edges.filter((edge) => edge.from === state && edge.to === state);
    return loops.length === 0 ? 0 : 44 + 30 * (loops.length - 1) + Math.max(...loops.map((edge) => labelWidth(labelLines(edge))));
  };
  const nodes = new Map<string, NodeBox>();
  byRank.forEach((states, rank) => {
    const widths = states.map((state) => Math.max(110, textWidth(state, NODE_FONT_SIZE) + 36));
    const gaps = states.map((state, index) => (index === states.length - 1 ? 0 : NODE_GAP + loopRoom(state)));
    const total = widths.reduce((sum, width) => sum + width, 0) + gaps.reduce((sum, gap) => sum + gap, 0);
    let left = -total / 2;
    states.forEach((state, index) => {
      const width = widths[index]!;
      nodes.set(state, { state, x: round(left + width / 2), y: rank * RANK_GAP, width: round(width), height: NODE_HEIGHT });
      left += width + gaps[index]!;
    });
  });

  const box = (state: string): NodeBox => nodes.get(state)!;
  const loopsSoFar = new Map<string, number>();
  const lanesSoFar = { left: 0, right: 0 };
  const pairKey = (edge: GraphEdge) => [edge.from, edge.to].sort().join('\u0000');
  const pairs = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    if (edge.from !== edge.to && Math.abs(ranks.get(edge.from)! - ranks.get(edge.to)!) === 1) {
      const list = pairs.get(pairKey(edge)) ?? [];
      list.push(edge);
      pairs.set(pairKey(edge), list);
    }
  }

  const routes = graph.edges.map((edge): MutableRoute => {
    const lines = labelLines(edge);
    const from = box(edge.from);
    const to = box(edge.to);
    const span = ranks.get(edge.to)! - ranks.get(edge.from)!;

    if (edge.from === edge.to) {
      const index = loopsSoFar.get(edge.from) ?? 0;
      loopsSoFar.set(edge.from, index + 1);
      const right = from.x + from.width / 2;
      const reach = 44 + index * 30;
      const start = point(right, from.y - 8);
      const end = point(right, from.y + 8);
      const c1 = point(right + reach, from.y - 30 - index * 12);
      const c2 = point(right + reach, from.y + 30 + index * 12);
      return { edge, lines, path: `M${format(start)} C${format(c1)} ${format(c2)} ${format(end)}`, points: [start, c1, c2, end], label: { ...point(right + reach * 0.75 + 6, from.y), anchor: 'start' } };
    }

    if (Math.abs(span) === 1) {
      const group = pairs.get(pairKey(edge))!;
      const index = group.indexOf(edge);
      // The fan is measured across the pair's own direction, so opposite edges separate.
      const [first, second] = [from.state, to.state].sort();
      const a = box(first!);
      const b = box(second!);
      const bend = (index - (group.length - 1) / 2) * 60;
      const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
      const normal = { x: -(b.y - a.y) / length, y: (b.x - a.x) / length };
      const control = point((from.x + to.x) / 2 + normal.x * bend, (from.y + to.y) / 2 + normal.y * bend);
      const start = exitPoint(from, control);
      const end = exitPoint(to, control);
      const middle = point(0.25 * start.x + 0.5 * control.x + 0.25 * end.x, 0.25 * start.y + 0.5 * control.y + 0.25 * end.y);
      // The label goes on the outer side of the curve: where it bends, or where it leans.
      const lean = bend !== 0 ? normal.x * bend : to.x - from.x;
      const anchor = Math.abs(lean) < 1 ? 'middle' : lean < 0 ? 'end' : 'start';
      const label = { x: round(middle.x + (anchor === 'end' ? -6 : anchor === 'start' ? 6 : 0)), y: middle.y, anchor } as const;
      return { edge, lines, path: `M${format(start)} Q${format(control)} ${format(end)}`, points: [start, control, end], label };
    }

    if (span === 0) {
      // A shallow arc, so its label (at the apex) stays clear of the labels between ranks.
      const over = from.x < to.x;
      const direction = over ? -1 : 1;
      const start = point(from.x, from.y + (direction * from.height) / 2);
      const end = point(to.x, to.y + (direction * to.height) / 2);
      const control = point((from.x + to.x) / 2, start.y + direction * 48);
      const middle = point((start.x + end.x) / 4 + control.x / 2, (start.y + end.y) / 4 + control.y / 2);
      return { edge, lines, path: `M${format(start)} Q${format(control)} ${format(end)}`, points: [start, control, end], label: { ...middle, anchor: 'middle' } };
    }

    // Two ranks or more: around every state of the ranks in between, on the outer side.
    const top = Math.min(ranks.get(edge.from)!, ranks.get(edge.to)!);
    const bottom = Math.max(ranks.get(edge.from)!, ranks.get(edge.to)!);
    const spanned = [...nodes.values()].filter((node) => {
      const rank = ranks.get(node.state)!;
      return rank >= top && rank <= bottom;
    });
    const side = (from.x + to.x) / 2 <= 0 ? 'left' : 'right';
    const lane = lanesSoFar[side]++;
    const laneX = side === 'left'
      ? Math.min(...spanned.map((node) => node.x - node.width / 2)) - 40 - lane * LANE_GAP
      : Math.max(...spanned.map((node) => node.x + node.width / 2)) + 40 + lane * LANE_GAP;
    const start = exitPoint(from, { x: laneX, y: from.y });
    const end = exitPoint(to, { x: laneX, y: to.y });
    const c1 = point(laneX, start.y);
    const c2 = point(laneX, end.y);
    const middle = point((start.x + 3 * c1.x + 3 * c2.x + end.x) / 8, (start.y + 3 * c1.y + 3 * c2.y + end.y) / 8);
    return {
      edge,
      lines,
      path: `M${format(start)} C${format(c1)} ${format(c2)} ${format(end)}`,
      points: [start, c1, c2, end],
      label: { x: round(middle.x + (side === 'left' ? -6 : 6)), y: middle.y, anchor: side === 'left' ? 'end' : 'start' },
      lane: { side, x: laneX },
    };
  });

  // Labels of the edges that go around: beyond the outermost lane of their side, stacked.
  for (const side of ['left', 'right'] as const) {
    const around = routes.filter((route) => route.lane?.side === side);
    if (around.length === 0) continue;
    const outer = side === 'left' ? Math.min(...around.map((route) => route.lane!.x)) - 6 : Math.max(...around.map((route) => route.lane!.x)) + 6;
    around.forEach((route, index) => {
      const height = route.lines.length * (LABEL_FONT_SIZE + 3) + 8;
      route.label = { x: round(outer), y: round(route.label.y + (index - (around.length - 1) / 2) * height), anchor: side === 'left' ? 'end' : 'start' };
    });
  }

  const initial = box(graph.initial);
  return { nodes, routes, start: point(initial.x, initial.y - initial.height / 2 - 46) };
}

function labelLines(edge: GraphEdge): string[] {
  return edgeDetail(edge) === '' ? [edgeTrigger(edge)] : [edgeTrigger(edge), edgeDetail(edge)];
}

/** Width of a label's box: the widest line, the first one bold. */
export function labelWidth(lines: readonly string[]): number {
  return Math.max(...lines.map((line, index) => textWidth(line, index === 0 ? LABEL_FONT_SIZE + 1 : LABEL_FONT_SIZE - 1))) + 8;
}
