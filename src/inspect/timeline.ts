/**
 * `hookline inspect`: a delivery's recorded transitions as a timeline, each matched to the edge of
 * the delivery machine it took, beside the machine's edges with how often each was taken.
 */
import type { GraphEdge, MachineGraph, PathHighlight } from '../diagram/index.js';
import { edgeLabel } from '../diagram/index.js';
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
    // Attempt outcomes leave `delivering` counted (`countAttempt`): the n-th such hop is the n-th attempt.
    const attempt = edge !== null && edge.from === 'delivering' && edge.actions.includes('countAttempt') ? (detail.attemptLog[attemptIndex++] ?? null) : null;
    return { transition, edge, known: edge !== null, attempt };
  });
}

/** How often each state was entered and each edge taken, for a highlighted diagram. */
export function pathHighlight(steps: readonly PathStep[]): PathHighlight {
  const visited = new Map<string, number>();
  const taken = new Map<GraphEdge, number>();
  for (const step of steps) {
    visited.set(step.transition.to, (visited.get(step.transition.to) ?? 0) + 1);
    if (step.edge) taken.set(step.edge, (taken.get(step.edge) ?? 0) + 1);
  }
  return { visited, taken };
}

function elapsed(ms: number): string {
  if (ms < 1000) return `+${ms} ms`;
  if (ms < 60_000) return `+${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `+${(ms / 60_000).toFixed(1)} min`;
  return `+${(ms / 3_600_000).toFixed(1)} h`;
}

function attemptText(attempt: AttemptLogEntry): string {
  const answer = attempt.statusCode === null ? `no answer (${attempt.error ?? 'unknown'})` : `HTTP ${attempt.statusCode}`;
  return `attempt ${attempt.attempt}: ${answer} in ${attempt.durationMs} ms`;
}

function table(rows: readonly string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd());
}

/**
 * The inspection as text: a header, the timeline (time, time since creation, transition, event,
 * attempt), and beside it (or below, when `columns` is too narrow) the machine's edges with the
 * times each was taken; then the path as one line.
 */
export function formatInspection(detail: DeliveryDetail, graph: MachineGraph, columns = 160): string {
  const steps = matchPath(graph, detail);
  const { taken } = pathHighlight(steps);
  const start = steps[0] ? Date.parse(steps[0].transition.at) : Date.parse(detail.createdAt);

  // Times of day when the whole history fits in one (UTC) day, whose date the header shows.
  const sameDay = steps.every((step) => step.transition.at.slice(0, 10) === detail.createdAt.slice(0, 10));
  const timeline = table([
    [sameDay ? `at (${detail.createdAt.slice(0, 10)})` : 'at', 'since', 'transition', 'event', 'attempt'],
    ...steps.map((step) => [
      sameDay ? step.transition.at.slice(11, 23) : step.transition.at,
      elapsed(Date.parse(step.transition.at) - start),
      `${step.transition.from ?? '[*]'} → ${step.transition.to}`,
      `${step.transition.event}${step.known ? '' : ' (not in the machine!)'}`,
      step.attempt ? attemptText(step.attempt) : '',
    ]),
  ]);
  const created = steps.filter((step) => step.transition.from === null).length;
  const machine = table([
    ['taken', `${graph.id} machine edge`],
    [created > 0 ? `${created}×` : '·', `[*] → ${graph.initial}`],
    ...graph.edges.map((edge) => [taken.has(edge) ? `${taken.get(edge)}×` : '·', `${edge.from} → ${edge.to}  ${edgeLabel(edge)}`]),
  ]);

  const timelineWidth = Math.max(...timeline.map((line) => line.length));
  const machineWidth = Math.max(...machine.map((line) => line.length));
  let body: string[];
  if (timelineWidth + 4 + machineWidth <= columns) {
    body = Array.from({ length: Math.max(timeline.length, machine.length) }, (_, index) => `${(timeline[index] ?? '').padEnd(timelineWidth)}    ${machine[index] ?? ''}`.trimEnd());
  } else {
    body = [...timeline, '', ...machine];
  }

  const path = steps.length === 0 ? '(no transitions recorded)' : [steps[0]!.transition.from ?? '[*]', ...steps.map((step) => step.transition.to)].join(' → ');
  const unknown = steps.filter((step) => !step.known);
  const next = detail.nextAttemptAt === null ? '' : `, next attempt at ${detail.nextAttemptAt}`;
  return [
    `delivery ${detail.id} of event ${detail.eventId} (${detail.eventType})`,
    `status ${detail.status} after ${detail.attempts} of at most ${detail.maxAttempts} attempts${next}; created ${detail.createdAt}, updated ${detail.updatedAt}`,
    '',
    ...body,
    '',
    `path: ${path}`,
    ...(unknown.length > 0 ? [`warning: ${unknown.length} transition(s) are not edges of the ${graph.id} machine; the log and the machine disagree`] : []),
    '',
  ].join('\n');
}
