/**
 * `hookline inspect`: a delivery's recorded transitions as a timeline, each matched to the edge of
 * the delivery machine it took, and the machine's edges with how often each was taken.
 */
import type { GraphEdge, MachineGraph, PathHighlight } from '../diagram/index.js';
import { edgeLabel } from '../diagram/index.js';
import { counted } from '../plural.js';
import { textTable } from '../text-table.js';
import type { AttemptLogEntry, DeliveryDetail, DeliveryTransition } from '../sdk/types.js';

export interface PathStep {
  readonly transition: DeliveryTransition;
  /** The machine's edge this transition took; null for the creation, and for one not in the machine. */
  readonly edge: GraphEdge | null;
  /** True when the transition matches the machine (the creation into the initial state, or an edge). */
  readonly known: boolean;
  /** The attempt whose outcome caused this transition, if any. */
  readonly attempt: AttemptLogEntry | null;
}

/** The delivery machine's actions that count an attempt's outcome (src/machines/delivery.ts). */
const ATTEMPT_COUNTERS: ReadonlySet<string> = new Set(['countAttempt', 'countAttemptOutsideRound']);

/** Matches each recorded transition to the machine: a hop out of a transient state takes its eventless edge. */
export function matchPath(graph: MachineGraph, detail: Pick<DeliveryDetail, 'transitions' | 'attemptLog'>): PathStep[] {
  let attemptIndex = 0;
  return detail.transitions.map((transition) => {
    if (transition.from === null) return { transition, edge: null, known: transition.to === graph.initial, attempt: null };
    const edge =
      graph.edges.find((candidate) => {
        if (candidate.from !== transition.from || candidate.to !== transition.to) return false;
        return candidate.event === transition.event || (candidate.event === null && graph.transients.includes(transition.from!));
      }) ?? null;
    // Attempt outcomes are counted, in the round or outside it (a 410), sent or failed unsent under
    // an open circuit (`CIRCUIT_OPEN`): the n-th such hop is the n-th attempt.
    const attempt = edge !== null && edge.actions.some((action) => ATTEMPT_COUNTERS.has(action)) ? (detail.attemptLog[attemptIndex++] ?? null) : null;
    return { transition, edge, known: edge !== null, attempt };
  });
}

/** How often each state was entered and each edge taken, for a highlighted diagram. */
export function pathHighlight(steps: readonly PathStep[]): PathHighlight {
  const visited = new Map<string, number>();
  const taken = new Map<GraphEdge, number>();
  let created = 0;
  for (const step of steps) {
    visited.set(step.transition.to, (visited.get(step.transition.to) ?? 0) + 1);
    if (step.edge) taken.set(step.edge, (taken.get(step.edge) ?? 0) + 1);
    if (step.transition.from === null && step.known) created++;
  }
  return { visited, taken, created };
}

function elapsed(ms: number): string {
  if (ms < 1000) return `+${ms} ms`;
  if (ms < 60_000) return `+${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `+${(ms / 60_000).toFixed(1)} min`;
  return `+${(ms / 3_600_000).toFixed(1)} h`;
}

function attemptText(attempt: AttemptLogEntry): string {
  if (attempt.errorCode === 'circuit_open') return `attempt ${attempt.attempt}: not sent (the endpoint's circuit was open)`;
  const answer = attempt.statusCode === null ? `no answer (${attempt.error ?? 'unknown'})` : `HTTP ${attempt.statusCode}`;
  return `attempt ${attempt.attempt}: ${answer} in ${attempt.durationMs} ms`;
}

/**
 * The inspection as text: a header; the delivery's path, one row per recorded transition (time,
 * time since creation, from → to, the machine event, the attempt and its answer); the machine's
 * edges, one row each, with how often this delivery took it; then the path as one line. Two tables,
 * one under the other: their rows are different things (a moment of this delivery, an edge of the
 * machine) and must not read as one row.
 */
export function formatInspection(detail: DeliveryDetail, graph: MachineGraph): string {
  const steps = matchPath(graph, detail);
  const { taken, created } = pathHighlight(steps);
  const start = steps[0] ? Date.parse(steps[0].transition.at) : Date.parse(detail.createdAt);

  // Times of day when the whole history fits in one (UTC) day, whose date the header shows.
  const sameDay = steps.every((step) => step.transition.at.slice(0, 10) === detail.createdAt.slice(0, 10));
  const timeline = textTable([
    [sameDay ? `at (${detail.createdAt.slice(0, 10)})` : 'at', 'since', 'transition', 'event', 'attempt'],
    ...steps.map((step) => [
      sameDay ? step.transition.at.slice(11, 23) : step.transition.at,
      elapsed(Date.parse(step.transition.at) - start),
      `${step.transition.from ?? '[*]'} → ${step.transition.to}`,
      `${step.transition.event}${step.known ? '' : ' (not in the machine!)'}`,
      step.attempt ? attemptText(step.attempt) : '',
    ]),
  ]);
  const machine = textTable([
    ['taken', 'edge', 'on'],
    [created > 0 ? `${created}×` : '·', `[*] → ${graph.initial}`, '(created)'],
    ...graph.edges.map((edge) => [taken.has(edge) ? `${taken.get(edge)}×` : '·', `${edge.from} → ${edge.to}`, edgeLabel(edge)]),
  ]);

  const path = steps.length === 0 ? '(no transitions recorded)' : [steps[0]!.transition.from ?? '[*]', ...steps.map((step) => step.transition.to)].join(' → ');
  const unknown = steps.filter((step) => !step.known);
  const next = detail.nextAttemptAt === null ? '' : `, next attempt at ${detail.nextAttemptAt}`;
  return [
    `delivery ${detail.id} of event ${detail.eventId} (${detail.eventType})`,
    `status ${detail.status} after ${detail.attempts} of at most ${counted(detail.maxAttempts, 'attempt')}${next}; created ${detail.createdAt}, updated ${detail.updatedAt}`,
    '',
    `The delivery's path (${counted(steps.length, 'transition')}):`,
    ...timeline,
    '',
    `The ${graph.id} machine's edges (${counted(graph.edges.length + 1, 'edge')}), × how often this delivery took each:`,
    ...machine,
    '',
    `path: ${path}`,
    ...(unknown.length > 0 ? [`warning: ${counted(unknown.length, 'transition')} ${unknown.length === 1 ? 'is not an edge' : 'are not edges'} of the ${graph.id} machine; the log and the machine disagree`] : []),
    '',
  ].join('\n');
}
