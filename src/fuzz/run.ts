/**
 * The receiver fuzzer's driver. For each kind of case it runs one seeded fast-check property: build
 * a request, send it (through the injected `send`, so the core does no I/O of its own), and judge
 * the answer. A wrong verdict fails the property and fast-check shrinks the case; the last failing
 * request is the smallest one found. Runs are sequential, so the same seed, clock and receiver make
 * the same requests in the same order.
 */
import fc from 'fast-check';
import { decodeSecret } from '../signing/secret.js';
import type { FuzzRequest } from './build.js';
import { buildRequest } from './build.js';
import type { CaseKind, Expectation, FuzzCase } from './cases.js';
import { CASE_KINDS, CASE_SPECS, caseArbitrary } from './cases.js';

/** What came back: a status, or no answer (`error` says why). */
export interface FuzzOutcome {
  readonly status: number | null;
  readonly error: string | null;
}

export interface FuzzOptions {
  /** The receiver's `whsec_…` secret. */
  readonly secret: string;
  readonly seed: number;
  /** Runs per kind of case (some kinds cap it, see CASE_SPECS). */
  readonly runs: number;
  /** @default every kind */
  readonly kinds?: readonly CaseKind[];
  /** The receiver's timestamp tolerance. @default 300 */
  readonly toleranceSeconds?: number;
  /** The receiver's body limit; oversized cases go just past it. @default 1 MiB */
  readonly maxBodyBytes?: number;
  /** Count a second acceptance of the same `webhook-id` as a failure, not a warning. @default false */
  readonly strictReplay?: boolean;
  /** Requests spent on shrinking one failure at most. @default 500 */
  readonly maxShrinkRequests?: number;
  /** The run stops after this many requests in a row got no answer (a receiver that is down). @default 5 */
  readonly maxNoAnswerStreak?: number;
  /** Sends one request; must not throw (a failure to answer is an outcome with `error`). */
  send(request: FuzzRequest): Promise<FuzzOutcome>;
  /** @default Date.now */
  readonly now?: () => number;
  onProgress?(progress: { done: number; total: number; kind: CaseKind; shrinking: boolean }): void;
}

export type Verdict = 'pass' | 'fail' | 'warn';

export interface Counterexample {
  readonly fuzzCase: FuzzCase;
  readonly requests: readonly FuzzRequest[];
  readonly outcomes: readonly FuzzOutcome[];
  readonly reason: string;
  readonly shrinks: number;
  /** fast-check's path to the counterexample (with the kind's seed it replays it directly). */
  readonly path: string | null;
}

export interface CaseResult {
  readonly kind: CaseKind;
  readonly expect: Expectation;
  readonly what: string;
  /** Cases generated before the first failure (or all of them). */
  readonly runs: number;
  readonly requests: number;
  /** Answers to those cases (shrinking not counted) by status (`204`, `400`, `no answer`), or by pair (`204→204`) for repeated sends. */
  readonly answers: Readonly<Record<string, number>>;
  readonly verdict: Verdict;
  /** How many cases drew a warning (a replay accepted twice), and what the first one said. */
  readonly warnings: number;
  readonly warning: string | null;
  readonly failure: Counterexample | null;
}

export interface FuzzReport {
  readonly seed: number;
  readonly results: readonly CaseResult[];
  readonly failed: number;
  readonly warned: number;
  /** Set when the run stopped early because the receiver stopped answering; the kinds after it did not run. */
  readonly stopped: string | null;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const is2xx = (outcome: FuzzOutcome) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
const answerText = (outcome: FuzzOutcome) => (outcome.status === null ? 'no answer' : String(outcome.status));

/** The verdict on one case's answers; `reason` says what was wrong (or worth a warning). */
export function judge(expect: Expectation, outcomes: readonly FuzzOutcome[]): { verdict: Verdict; reason: string | null } {
  const [first, second] = outcomes;
  if (!first) return { verdict: 'fail', reason: 'nothing was sent' };
  const noAnswer = first.status === null ? `no answer (${first.error ?? 'unknown error'})` : null;
  switch (expect) {
    case 'accept':
      return is2xx(first) ? { verdict: 'pass', reason: null } : { verdict: 'fail', reason: `expected 2xx, got ${noAnswer ?? first.status}` };
    case 'reject':
      if (noAnswer) return { verdict: 'fail', reason: `expected a non-2xx answer, got ${noAnswer}` };
      return is2xx(first) ? { verdict: 'fail', reason: `expected a non-2xx answer, got ${first.status}: the receiver accepted it` } : { verdict: 'pass', reason: null };
    case 'reject-or-close':
      return is2xx(first) ? { verdict: 'fail', reason: `expected a non-2xx answer or a closed connection, got ${first.status}: the receiver accepted it` } : { verdict: 'pass', reason: null };
    case 'accept-once':
      if (!is2xx(first)) return { verdict: 'fail', reason: `the first, valid send: expected 2xx, got ${noAnswer ?? first.status}` };
      if (second && is2xx(second)) return { verdict: 'warn', reason: `the same webhook-id was accepted twice (${first.status}, then ${second.status}): a replay would be processed again unless the receiver de-duplicates by webhook-id` };
      return { verdict: 'pass', reason: null };
  }
}

/** A kind's own seed, from the run's seed and the kind's name: `--only KIND` replays the same cases. */
export function kindSeed(seed: number, kind: CaseKind): number {
  let hash = 0x811c9dc5;
  for (const char of kind) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return (seed ^ hash) | 0;
}

export const runsFor = (kind: CaseKind, runs: number): number => Math.min(runs, (CASE_SPECS[kind] as { maxRuns?: number }).maxRuns ?? runs);

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const key = decodeSecret(options.secret);
  if (!key) throw new TypeError('the secret must be "whsec_" followed by base64');
  const now = options.now ?? Date.now;
  const kinds = options.kinds ?? CASE_KINDS;
  const total = kinds.reduce((sum, kind) => sum + runsFor(kind, options.runs), 0);
  const budget = options.maxShrinkRequests ?? 500;
  // In every webhook-id, so that ids do not repeat across runs (a receiver may remember them).
  const runTag = Math.floor(now() / 1000).toString(36);
  let done = 0;
  const results: CaseResult[] = [];
  const maxStreak = options.maxNoAnswerStreak ?? 5;
  let noAnswerStreak = 0;
  let stopped: string | null = null;

  for (const [kindIndex, kind] of kinds.entries()) {
    if (stopped !== null) break;
    const spec: { expect: Expectation; what: string } = CASE_SPECS[kind];
    const numRuns = runsFor(kind, options.runs);
    const answers: Record<string, number> = {};
    let requests = 0;
    let sequence = 0;
    let warnings = 0;
    let warning: string | null = null;
    let failing = false;
    let shrinkAttempts = 0;
    let last: Omit<Counterexample, 'shrinks' | 'path'> | null = null;

    const property = fc.asyncProperty(caseArbitrary(kind), async (fuzzCase) => {
      if (stopped !== null) return true; // the receiver is gone: finish without sending
      if (failing && ++shrinkAttempts > budget) return true; // out of budget: keep the smallest so far
      const request = buildRequest(fuzzCase, {
        key,
        webhookId: `msg_${fuzzCase.delivery.idStem}_${runTag}${kindIndex.toString(36)}${(sequence++).toString(36)}`,
        nowSeconds: Math.floor(now() / 1000),
        toleranceSeconds: options.toleranceSeconds ?? 300,
        maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      });
      const sent = spec.expect === 'accept-once' ? [request, request] : [request];
      const outcomes: FuzzOutcome[] = [];
      for (const one of sent) {
        requests++;
        const outcome = await sendSafely(options.send, one);
        outcomes.push(outcome);
        // A closed connection is a fair answer to an oversized body; elsewhere, a run of them means the receiver is down.
        if (outcome.status !== null) noAnswerStreak = 0;
        else if (spec.expect !== 'reject-or-close' && ++noAnswerStreak >= maxStreak) {
          stopped = `${maxStreak} requests in a row got no answer (last: ${outcome.error ?? 'unknown error'}); is the receiver running at the target?`;
        }
      }
      const tally = outcomes.map(answerText).join('→');
      if (!failing) answers[tally] = (answers[tally] ?? 0) + 1;
      const { verdict, reason } = judge(spec.expect, outcomes);
      if (!failing) options.onProgress?.({ done: ++done, total, kind, shrinking: false });
      else options.onProgress?.({ done, total, kind, shrinking: true });
      if (verdict === 'warn' && !options.strictReplay) {
        warnings++;
        warning ??= reason;
        return true;
      }
      if (verdict === 'pass') return true;
      failing = true;
      last = { fuzzCase, requests: sent, outcomes, reason: reason ?? 'wrong verdict' };
      return false;
    });

    const details = await fc.check(property, { seed: kindSeed(options.seed, kind), numRuns });
    done += numRuns - Math.min(numRuns, details.numRuns);
    const failure: Counterexample | null = details.failed && last
      ? { ...(last as Omit<Counterexample, 'shrinks' | 'path'>), shrinks: details.numShrinks, path: details.counterexamplePath }
      : null;
    results.push({
      kind,
      expect: spec.expect,
      what: spec.what,
      runs: details.numRuns,
      requests,
      answers,
      verdict: failure ? 'fail' : warnings > 0 ? 'warn' : 'pass',
      warnings,
      warning,
      failure,
    });
  }
  return {
    seed: options.seed,
    results,
    failed: results.filter((result) => result.verdict === 'fail').length,
    warned: results.filter((result) => result.verdict === 'warn').length,
    stopped,
  };
}

async function sendSafely(send: FuzzOptions['send'], request: FuzzRequest): Promise<FuzzOutcome> {
  try {
    return await send(request);
  } catch (error) {
    return { status: null, error: error instanceof Error ? error.message : String(error) };
  }
}
