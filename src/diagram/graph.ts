/**
 * The state diagrams are drawn from the XState machine definitions themselves: `compileMachine`
 * walks each definition once and lists every state and transition (`edges`), and every renderer
 * here reads only that list. A diagram therefore cannot drift from the machine it shows; a test
 * compares each rendering with the definitions and the README's copies with fresh renderings.
 */
import { deliveryTable, webhookConfigTable } from '../machines/index.js';
import type { TransitionEdge } from '../machines/index.js';

/** The machines `hookline diagram --machine` can draw. */
export const DIAGRAM_MACHINES = ['delivery', 'webhook'] as const;
export type DiagramMachine = (typeof DIAGRAM_MACHINES)[number];

export const DIAGRAM_FORMATS = ['mermaid', 'dot', 'svg'] as const;
export type DiagramFormat = (typeof DIAGRAM_FORMATS)[number];

export type GraphEdge = TransitionEdge<string, string>;

export interface MachineGraph {
  /** The machine's XState id (`delivery`, `webhookConfig`). */
  readonly id: string;
  readonly title: string;
  /** Every state, in definition order. */
  readonly states: readonly string[];
  readonly initial: string;
  readonly finals: readonly string[];
  /** States left at once by an eventless transition (drawn dashed). */
  readonly transients: readonly string[];
  readonly edges: readonly GraphEdge[];
}

const TITLES: Record<DiagramMachine, string> = {
  delivery: 'Delivery machine (src/machines/delivery.ts)',
  webhook: 'Webhook configuration machine (src/machines/webhook-config.ts)',
};

/** The graph of one of Hookline's machines, read from its compiled definition. */
export function machineGraph(machine: DiagramMachine): MachineGraph {
  const table = machine === 'delivery' ? deliveryTable : webhookConfigTable;
  return {
    id: table.id,
    title: TITLES[machine],
    states: table.states,
    initial: table.initialState,
    finals: table.finalStates,
    transients: table.transientStates,
    edges: table.edges,
  };
}

/** `START_ATTEMPT`, or `always` for an eventless transition. */
export function edgeTrigger(edge: GraphEdge): string {
  return edge.event ?? 'always';
}

/** `[guard] / action, action`: what besides the trigger an edge carries; '' when nothing. */
export function edgeDetail(edge: GraphEdge): string {
  const parts: string[] = [];
  if (edge.guard !== undefined) parts.push(`[${edge.guard}]`);
  if (edge.actions.length > 0) parts.push(`/ ${edge.actions.join(', ')}`);
  return parts.join(' ');
}

/** The whole label of an edge: `ATTEMPT_FAILED / countAttempt`, `always [hasAttemptsLeft] / scheduleRetry`. */
export function edgeLabel(edge: GraphEdge): string {
  const detail = edgeDetail(edge);
  return detail === '' ? edgeTrigger(edge) : `${edgeTrigger(edge)} ${detail}`;
}
