/**
 * Compiles a flat XState v5 machine into a lookup table that the engine runs on its hot path.
 *
 * The machine definition is walked once; every `state x event type` becomes an ordered list of
 * candidates (first enabled guard wins, as in XState), and every candidate that lands in a
 * transient state carries that state's `always` candidates, already resolved. A step is then a map
 * lookup, guard calls and context updaters (the same plain functions the machine's setup wraps),
 * and one result object: the `actions` and `transitions` arrays are built at compile time, frozen,
 * and shared by every step that takes the same path.
 *
 * Supported machines are the ones Hookline writes: one level of atomic and final states, named
 * guards and actions without params, `assign` for context, no entry/exit/after/invoke, and
 * transient states that are never resting (their `always` list ends with an unguarded candidate,
 * and they have no `on`). Anything else is refused at compile time rather than run differently
 * from XState.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { HooklineError } from '../errors.js';

export type GuardFunction<TContext, TEvent> = (context: TContext, event: TEvent) => boolean;
export type ContextUpdater<TContext, TEvent> = (context: TContext, event: TEvent) => TContext;

/** The plain functions behind a machine's named guards and `assign` actions, by name. */
export interface MachineImplementations<TContext, TEvent> {
  readonly guards: Readonly<Record<string, GuardFunction<TContext, TEvent>>>;
  /** One per `assign` action of the machine; every other named action is an effect. */
  readonly updaters: Readonly<Record<string, ContextUpdater<TContext, TEvent>>>;
}

/** One transition taken within a step; the hop out of a transient state carries the step's event. */
export interface TransitionHop<TState extends string, TEventType extends string> {
  readonly from: TState;
  readonly to: TState;
  readonly event: TEventType;
}

export interface StepResult<
  TState extends string,
  TContext,
  TEventType extends string,
  THopState extends string = TState,
> {
  readonly state: TState;
  /** The context after every updater on the path; the input object when none ran. */
  readonly context: TContext;
  /** Effect actions to run, in order (named actions that are not `assign`). Shared and frozen. */
  readonly actions: readonly string[];
  /** Every hop, transient ones included. Shared and frozen. */
  readonly transitions: readonly TransitionHop<THopState, TEventType>[];
}

/** A transition of the definition, for diagrams. `event` is null for an eventless (`always`) one. */
export interface TransitionEdge<TState extends string, TEventType extends string> {
  readonly from: TState;
  readonly to: TState;
  readonly event: TEventType | null;
  readonly guard?: string;
  /** Every named action, `assign` ones included, in order. */
  readonly actions: readonly string[];
}

export interface CompiledMachine<
  TState extends string,
  TContext,
  TEvent extends { readonly type: string },
  TResting extends TState = TState,
> {
  readonly id: string;
  readonly initialState: TResting;
  /** Every state in document order, transient ones included. */
  readonly states: readonly TState[];
  readonly finalStates: readonly TResting[];
  /** States left at once by an eventless transition; never a step's result. */
  readonly transientStates: readonly TState[];
  /** Every event type some state accepts, in order of first appearance. */
  readonly eventTypes: readonly TEvent['type'][];
  readonly edges: readonly TransitionEdge<TState, TEvent['type']>[];
  /**
   * The step for `event` in `state`, or null when the state does not accept it (no candidate's
   * guard passes). Throws HOOKLINE_ERR_INTERNAL for a state the machine does not have or a
   * transient one.
   */
  next(
    state: TResting,
    context: TContext,
    event: TEvent,
  ): StepResult<TResting, TContext, TEvent['type'], TState> | null;
}

interface Candidate {
  readonly guard: GuardFunction<unknown, unknown> | null;
  readonly update: ContextUpdater<unknown, unknown> | null;
  readonly target: string;
  /** The target's `always` candidates when it is transient. */
  readonly then: readonly Candidate[] | null;
  readonly actions: readonly string[];
  readonly transitions: readonly TransitionHop<string, string>[];
}

interface Step {
  readonly state: string;
  readonly context: unknown;
  readonly actions: readonly string[];
  readonly transitions: readonly TransitionHop<string, string>[];
}

/**
 * Walks `machine` once and returns its table. The type arguments are the caller's statement of
 * the machine's states (all of them, and the resting ones), context and events.
 */
export function compileMachine<
  TState extends string,
  TContext,
  TEvent extends { readonly type: string },
  TResting extends TState = TState,
>(
  machine: AnyStateMachine,
  implementations: MachineImplementations<TContext, TEvent>,
): CompiledMachine<TState, TContext, TEvent, TResting> {
  const compiled = compile(machine, implementations as MachineImplementations<unknown, unknown>);
  return compiled as unknown as CompiledMachine<TState, TContext, TEvent, TResting>;
}

function compile(
  machine: AnyStateMachine,
  implementations: MachineImplementations<unknown, unknown>,
): CompiledMachine<string, unknown, { readonly type: string }> {
  const root = machine.root;
  const where = `machine '${machine.id}'`;
  if (root.type !== 'compound') refuse(`${where}: the root must be a compound state`);
  if (root.transitions.size > 0 || root.always !== undefined) refuse(`${where}: root-level transitions are not supported`);
  assertPlainNode(root, where);

  const nodes = Object.values(root.states) as AnyStateNode[];
  for (const node of nodes) {
    const at = `${where}, state '${node.key}'`;
    if (node.type !== 'atomic' && node.type !== 'final') refuse(`${at}: only atomic and final states are supported`);
    assertPlainNode(node, at);
    if (node.type === 'final' && (node.transitions.size > 0 || node.always !== undefined)) {
      refuse(`${at}: a final state takes no transitions`);
    }
    if (node.always !== undefined) {
      if (node.transitions.size > 0) refuse(`${at}: a transient state takes no events`);
      const last = node.always[node.always.length - 1];
      if (last === undefined || last.guard !== undefined) {
        refuse(`${at}: a transient state must end with an unguarded eventless transition`);
      }
    }
  }

  const guardOf = (transition: AnyTransitionDefinition, at: string): string | undefined => {
    const guard: unknown = transition.guard;
    if (guard === undefined) return undefined;
    const name = namedReference(guard, `${at}: guards must be named, without params`);
    const declared: unknown = machine.implementations.guards[name];
    if (typeof declared !== 'function' || 'check' in declared) {
      refuse(`${at}: guard '${name}' must be a plain guard given to setup`);
    }
    if (typeof implementations.guards[name] !== 'function') refuse(`${at}: no plain function for guard '${name}'`);
    return name;
  };
  const actionsOf = (transition: AnyTransitionDefinition, at: string): string[] =>
    transition.actions.map((action: unknown) => {
      const name = namedReference(action, `${at}: actions must be named, without params`);
      const declared: unknown = machine.implementations.actions[name];
      if (typeof declared !== 'function') refuse(`${at}: action '${name}' is not given to setup`);
      const isAssign = (declared as { type?: unknown }).type === 'xstate.assign';
      if (!isAssign && 'resolve' in declared) refuse(`${at}: built-in action '${name}' is not supported`);
      const hasUpdater = typeof implementations.updaters[name] === 'function';
      if (isAssign !== hasUpdater) {
        refuse(`${at}: action '${name}' ${isAssign ? 'is an assign without' : 'is an effect but has'} an updater`);
      }
      return name;
    });
  const targetOf = (node: AnyStateNode, transition: AnyTransitionDefinition, at: string): string => {
    const targets = transition.target;
    if (targets === undefined) return node.key;
    const target = targets[0];
    if (targets.length !== 1 || target === undefined || target.parent !== root) {
      refuse(`${at}: a transition must target one sibling state`);
    }
    return target.key;
  };

  const edges: TransitionEdge<string, string>[] = [];
  const eventTypes: string[] = [];
  for (const node of nodes) {
    for (const [eventType, transitions] of node.transitions) {
      const at = `${where}, state '${node.key}', event '${eventType}'`;
      if (eventType.includes('*')) refuse(`${at}: wildcard events are not supported`);
      if (!eventTypes.includes(eventType)) eventTypes.push(eventType);
      for (const transition of transitions) {
        edges.push(edge(node.key, targetOf(node, transition, at), eventType, guardOf(transition, at), actionsOf(transition, at)));
      }
    }
    for (const transition of node.always ?? []) {
      const at = `${where}, state '${node.key}', eventless transition`;
      edges.push(edge(node.key, targetOf(node, transition, at), null, guardOf(transition, at), actionsOf(transition, at)));
    }
  }

  const isEffect = (name: string): boolean => implementations.updaters[name] === undefined;
  const candidatesFor = (
    from: string,
    eventType: string,
    options: readonly TransitionEdge<string, string>[],
    prefix: Pick<Candidate, 'actions' | 'transitions'>,
    visiting: readonly string[],
  ): Candidate[] =>
    options.map((option) => {
      const actions = [...prefix.actions, ...option.actions.filter(isEffect)];
      const transitions = [...prefix.transitions, Object.freeze({ from, to: option.to, event: eventType })];
      const targetAlways = edges.filter((e) => e.from === option.to && e.event === null);
      let then: Candidate[] | null = null;
      if (targetAlways.length > 0) {
        if (visiting.includes(option.to)) refuse(`${where}: eventless transitions loop through '${option.to}'`);
        then = candidatesFor(option.to, eventType, targetAlways, { actions, transitions }, [...visiting, option.to]);
      }
      return Object.freeze({
        guard: option.guard === undefined ? null : (implementations.guards[option.guard] ?? null),
        update: composeUpdaters(option.actions.flatMap((name) => implementations.updaters[name] ?? [])),
        target: option.to,
        then: then === null ? null : Object.freeze(then),
        actions: Object.freeze(actions),
        transitions: Object.freeze(transitions),
      });
    });

  const table = new Map<string, Map<string, readonly Candidate[]> | null>();
  for (const node of nodes) {
    if (node.always !== undefined) {
      table.set(node.key, null);
      continue;
    }
    const byEvent = new Map<string, readonly Candidate[]>();
    for (const eventType of node.transitions.keys()) {
      const options = edges.filter((e) => e.from === node.key && e.event === eventType);
      byEvent.set(eventType, Object.freeze(candidatesFor(node.key, eventType, options, EMPTY_PATH, [])));
    }
    table.set(node.key, byEvent);
  }

  const initial = root.initial.target[0];
  if (initial === undefined || initial.always !== undefined) refuse(`${where}: the initial state must be a resting state`);

  function next(state: string, context: unknown, event: { readonly type: string }): Step | null {
    const byEvent = table.get(state);
    if (byEvent === undefined || byEvent === null) {
      throw new HooklineError('HOOKLINE_ERR_INTERNAL', `${where} has no resting state '${String(state)}'`);
    }
    const candidates = byEvent.get(event.type);
    return candidates === undefined ? null : take(candidates, context, event);
  }

  return Object.freeze({
    id: machine.id,
    initialState: initial.key,
    states: Object.freeze(nodes.map((node) => node.key)),
    finalStates: Object.freeze(nodes.filter((node) => node.type === 'final').map((node) => node.key)),
    transientStates: Object.freeze(nodes.filter((node) => node.always !== undefined).map((node) => node.key)),
    eventTypes: Object.freeze(eventTypes),
    edges: Object.freeze(edges),
    next,
  });
}

const EMPTY_PATH: Pick<Candidate, 'actions' | 'transitions'> = { actions: [], transitions: [] };

function take(candidates: readonly Candidate[], context: unknown, event: unknown): Step | null {
  for (let i = 0; i < candidates.length; i++) {
    const candidate = candidates[i]!;
    if (candidate.guard !== null && !candidate.guard(context, event)) continue;
    const updated = candidate.update === null ? context : candidate.update(context, event);
    // Transient targets end with an unguarded candidate (checked at compile time): never null.
    if (candidate.then !== null) return take(candidate.then, updated, event);
    return { state: candidate.target, context: updated, actions: candidate.actions, transitions: candidate.transitions };
  }
  return null;
}

function composeUpdaters(
  updaters: readonly ContextUpdater<unknown, unknown>[],
): ContextUpdater<unknown, unknown> | null {
  if (updaters.length === 0) return null;
  if (updaters.length === 1) return updaters[0]!;
  return (context, event) => updaters.reduce((current, update) => update(current, event), context);
}

function edge(
  from: string,
  to: string,
  event: string | null,
  guard: string | undefined,
  actions: readonly string[],
): TransitionEdge<string, string> {
  return Object.freeze({
    from,
    to,
    event,
    ...(guard === undefined ? {} : { guard }),
    actions: Object.freeze([...actions]),
  });
}

function assertPlainNode(node: AnyStateNode, at: string): void {
  if (node.config.after !== undefined) refuse(`${at}: delayed transitions are not supported`);
  if (node.entry.length > 0 || node.exit.length > 0) refuse(`${at}: entry and exit actions are not supported`);
  if (node.config.invoke !== undefined || node.config.onDone !== undefined) refuse(`${at}: invoke and onDone are not supported`);
}

function namedReference(reference: unknown, message: string): string {
  if (typeof reference === 'string') return reference;
  if (typeof reference === 'object' && reference !== null && !('params' in reference)) {
    const type: unknown = (reference as { type?: unknown }).type;
    if (typeof type === 'string') return type;
  }
  return refuse(message);
}

function refuse(message: string): never {
  throw new HooklineError('HOOKLINE_ERR_INTERNAL', `compileMachine: ${message}`);
}
