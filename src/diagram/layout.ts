/**
 * A small deterministic layout for state diagrams, so `hookline diagram --format svg` needs no
 * Graphviz: states in ranks by breadth-first distance from the initial state (top to bottom,
 * definition order within a rank), and each edge routed by what it spans:
 * - a self-loop: a loop on the state's right side, one size larger per extra loop;
 * - neighbouring ranks: a quadratic curve, edges between the same two states fanned apart;
 * - one rank: an arc over (left to right) or under (right to left);
 * - two ranks or more: around the states in between, on the outer side, one lane per edge, each
 *   lane far enough out that the label of the lane inside it fits between the two.
 * Every label sits beside the middle of its own edge, on the curve's outer side.
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

type LabelAnchor = EdgeRoute['label']['anchor'];

/** A route before its label is placed: which side of the anchor point the label extends to. */
interface RouteDraft extends Omit<EdgeRoute, 'label'> {
  readonly anchor: LabelAnchor;
}

/** An axis-aligned box by its top-left corner. */
export interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export interface DiagramLayout {
  readonly nodes: ReadonlyMap<string, NodeBox>;
  readonly routes: readonly EdgeRoute[];
  readonly start: Point;
}

export const NODE_FONT_SIZE = 13;
export const LABEL_FONT_SIZE = 11;
export const LABEL_LINE_HEIGHT = LABEL_FONT_SIZE + 3;
/** Where along its curve (0 at the source, 1 at the target) a label may go, in order of preference. */
const LABEL_POSITIONS = [0.5, 0.45, 0.55, 0.4, 0.6, 0.35, 0.65, 0.3, 0.7, 0.25, 0.75, 0.2, 0.8, 0.15, 0.85];
const NODE_HEIGHT = 36;
const RANK_GAP = 160;
const NODE_GAP = 110;
/** Room between a lane's label and the next lane out. */
const LANE_CLEARANCE = 12;

/** Text width estimate for a sans-serif font (no font metrics without a renderer). */
export function textWidth(text: string, fontSize: number): number {
  return text.length * fontSize * 0.62;
}

const round = (value: number): number => Math.round(value * 10) / 10;
const point = (x: number, y: number): Point => ({ x: round(x), y: round(y) });
const format = (p: Point): string => `${p.x},${p.y}`;

/**
 * Rank of every state: breadth-first distance from the initial state; unreachable ones last. A
 * transient state goes below every state that leads into it from its own rank or above (the
 * delivery machine's `failed` below `delivering`, though `pending` reaches it in one step too),
 * so that it reads as the outcome it is, and the states it leads to go below it.
 */
export function rankStates(graph: MachineGraph): Map<string, number> {
  const breadthFirst = (fixed: ReadonlyMap<string, number>): Map<string, number> => {
    const ranks = new Map<string, number>([[graph.initial, 0]]);
    const queue = [graph.initial];
    while (queue.length > 0) {
      queue.sort((a, b) => ranks.get(a)! - ranks.get(b)!);
      const state = queue.shift()!;
      for (const edge of graph.edges) {
        if (edge.from !== state || ranks.has(edge.to)) continue;
        ranks.set(edge.to, fixed.get(edge.to) ?? ranks.get(state)! + 1);
        queue.push(edge.to);
      }
    }
    return ranks;
  };
  const first = breadthFirst(new Map());
  const fixed = new Map<string, number>();
  for (const state of graph.transients) {
    const rank = first.get(state);
    if (rank === undefined) continue;
    const above = graph.edges.filter((edge) => edge.to === state && edge.from !== state && (first.get(edge.from) ?? Infinity) <= rank).map((edge) => first.get(edge.from)!);
    fixed.set(state, Math.max(rank, ...above.map((from) => from + 1)));
  }
  const ranks = fixed.size === 0 ? first : breadthFirst(fixed);
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

/** The point at `t` (0 to 1) of the Bézier curve with these end and control points (de Casteljau). */
function bezierPoint(points: readonly Point[], t: number): Point {
  let level: Point[] = [...points];
  while (level.length > 1) level = level.slice(1).map((next, index) => ({ x: level[index]!.x + (next.x - level[index]!.x) * t, y: level[index]!.y + (next.y - level[index]!.y) * t }));
  return level[0]!;
}

/** A label at `t` along the curve: on it (`middle`), or starting 6 units to its right (`start`) or ending 6 to its left (`end`). */
function labelAt(points: readonly Point[], anchor: LabelAnchor, t: number): EdgeRoute['label'] {
  const at = bezierPoint(points, t);
  return { ...point(at.x + (anchor === 'start' ? 6 : anchor === 'end' ? -6 : 0), at.y), anchor };
}

/** The box a label's lines take (drawn by svg.ts as the label's white backing). */
export function labelBox(label: EdgeRoute['label'], lines: readonly string[]): Box {
  const width = labelWidth(lines);
  const height = lines.length * LABEL_LINE_HEIGHT + 4;
  const x = label.anchor === 'start' ? label.x - 4 : label.anchor === 'end' ? label.x - width + 4 : label.x - width / 2;
  return { x, y: label.y - height / 2, width, height };
}

/** The area two boxes share (0 when they only touch or are apart). */
const overlap = (a: Box, b: Box): number =>
  Math.max(0, Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x)) * Math.max(0, Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y));

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
  /** Per side, the x the next lane's middle must reach: past the previous lane's label. */
  const laneReach: Record<'left' | 'right', number | undefined> = { left: undefined, right: undefined };
  const pairKey = (edge: GraphEdge) => [edge.from, edge.to].sort().join('\u0000');
  const pairs = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    if (edge.from !== edge.to && Math.abs(ranks.get(edge.from)! - ranks.get(edge.to)!) === 1) {
      const list = pairs.get(pairKey(edge)) ?? [];
      list.push(edge);
      pairs.set(pairKey(edge), list);
    }
  }

  const drafts = graph.edges.map((edge): RouteDraft => {
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
      return { edge, lines, path: `M${format(start)} C${format(c1)} ${format(c2)} ${format(end)}`, points: [start, c1, c2, end], anchor: 'start' };
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
      // The label goes on the outer side of the curve: where it bends, or where it leans.
      const lean = bend !== 0 ? normal.x * bend : to.x - from.x;
      const anchor = Math.abs(lean) < 1 ? 'middle' : lean < 0 ? 'end' : 'start';
      return { edge, lines, path: `M${format(start)} Q${format(control)} ${format(end)}`, points: [start, control, end], anchor };
    }

    if (span === 0) {
      // A shallow arc, so its label (on the curve) stays clear of the labels between ranks.
      const over = from.x < to.x;
      const direction = over ? -1 : 1;
      const start = point(from.x, from.y + (direction * from.height) / 2);
      const end = point(to.x, to.y + (direction * to.height) / 2);
      const control = point((from.x + to.x) / 2, start.y + direction * 48);
      return { edge, lines, path: `M${format(start)} Q${format(control)} ${format(end)}`, points: [start, control, end], anchor: 'middle' };
    }

    // Two ranks or more: around every state of the ranks in between, on the outer side.
    const top = Math.min(ranks.get(edge.from)!, ranks.get(edge.to)!);
    const bottom = Math.max(ranks.get(edge.from)!, ranks.get(edge.to)!);
    const spanned = [...nodes.values()].filter((node) => {
      const rank = ranks.get(node.state)!;
      return rank >= top && rank <= bottom;
    });
    const side = (from.x + to.x) / 2 <= 0 ? 'left' : 'right';
    const outward = side === 'left' ? -1 : 1;
    const anchor = side === 'left' ? 'end' : 'start';
    const start = point(from.x + (outward * from.width) / 2, from.y);
    const end = point(to.x + (outward * to.width) / 2, to.y);
    // The curve's outermost point (its middle) reaches only three quarters of the way to its control
    // points' x, so the lane is placed from where that point must be: clear of the states, and
    // beyond the label of the lane before it on this side.
    const statesEdge = outward * Math.max(...spanned.map((node) => outward * (node.x + (outward * node.width) / 2)));
    const needed = laneReach[side] ?? statesEdge + outward * 30;
    const laneX = (needed - (start.x + end.x) / 8) / 0.75;
    const points = [start, point(laneX, start.y), point(laneX, end.y), end];
    const middleLabel = labelBox(labelAt(points, anchor, 0.5), lines);
    laneReach[side] = side === 'left' ? middleLabel.x - LANE_CLEARANCE : middleLabel.x + middleLabel.width + LANE_CLEARANCE;
    return { edge, lines, path: `M${format(start)} C${format(points[1]!)} ${format(points[2]!)} ${format(end)}`, points, anchor };
  });

  // Each label sits beside its own edge: at the curve's middle, or, when that spot is taken by a
  // state or an earlier label, at the nearest point along the same curve that is free (failing
  // that, where it covers the least).
  const taken: Box[] = [...nodes.values()].map((node) => ({ x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height }));
  const routes = drafts.map(({ anchor, ...draft }): EdgeRoute => {
    const covered = (label: EdgeRoute['label']) => taken.reduce((sum, box) => sum + overlap(box, labelBox(label, draft.lines)), 0);
    let label = labelAt(draft.points, anchor, LABEL_POSITIONS[0]!);
    for (const t of LABEL_POSITIONS) {
      const candidate = labelAt(draft.points, anchor, t);
      if (covered(candidate) < covered(label)) label = candidate;
      if (covered(label) === 0) break;
    }
    taken.push(labelBox(label, draft.lines));
    return { ...draft, label };
  });

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
