/**
 * The receiver fuzzer's driver. For each kind of case it runs every one of its seeded fast-check
 * cases (a failure does not stop the kind, so one bug cannot hide another), sorting wrong answers
 * into failure classes (the kind and the answers, `400` or `204→409`). Then each class is shrunk on
 * its own: fast-check replays the class's first failing case by its path and shrinks while the
 * answers stay in that class, so each class ends on its smallest delivery. Sending is injected, so
 * the core does no I/O of its own; runs are sequential, so the same seed, clock and receiver make
 * the same requests in the same order.
 */
import fc from 'fast-check';
import { defaultSettings } from '../config/settings.js';
import { counted } from '../plural.js';
import { decodeSecret } from '../signing/secret.js';
import type { FuzzExchange, FuzzRequest } from './build.js';
import { buildExchange } from './build.js';
import type { CaseKind, Expectation, FuzzCase } from './cases.js';
import { CASE_KINDS, CASE_SPECS, caseArbitrary } from './cases.js';
import type { RunRecord } from './diagnose.js';
import { diagnose, refusedEverything, signedOutcomes } from './diagnose.js';
import { judgeSquatting } from './squatting.js';
import { splitsACharacter } from './text.js';

/** What came back: a status, or no answer (`error` says why). */
export interface FuzzOutcome {
  readonly status: number | null;
  readonly error: string | null;
}

/** How a repeated `webhook-id` must be answered: `2xx` (the default) or `any` answer. */
export type DuplicateExpectation = '2xx' | 'any';

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
  /** The receiver's body limit; oversized cases go just past it, chunked ones up to it (or to Hookline's largest delivery). @default 1 MiB */
  readonly maxBodyBytes?: number;
  /** HOOKLINE_MAX_BODY of the Hookline the receiver takes deliveries from: no case expecting a 2xx is larger than its largest envelope. @default the setting's default */
  readonly hooklineMaxBodyBytes?: number;
  /** What a repeated `webhook-id` must get. @default '2xx' */
  readonly expectDuplicate?: DuplicateExpectation;
  /** Real envelopes to build the bodies from (`--corpus`). @default generated events */
  readonly corpus?: readonly Uint8Array[];
  /** Unsigned headers sent with every request (`--header`), as a webhook's `headers` are. @default none */
  readonly customHeaders?: Readonly<Record<string, string>>;
  /** Requests spent on shrinking one failure class at most. @default 300 */
  readonly maxShrinkRequests?: number;
  /** The run stops after this many requests in a row got no answer (a receiver that is down). @default 3 */
  readonly maxNoAnswerStreak?: number;
  /** Sends one request; must not throw (a failure to answer is an outcome with `error`). */
  send(request: FuzzRequest): Promise<FuzzOutcome>;
  /** @default Date.now */
  readonly now?: () => number;
  onProgress?(progress: { done: number; total: number; kind: CaseKind; shrinking: boolean }): void;
}

/** `undecided`: no run could tell a right answer from a wrong one (see squatting.ts); not a failure, never a pass. */
export type Verdict = 'pass' | 'fail' | 'undecided';

/** One way a kind of case was answered wrong, with its smallest delivery. */
export interface FailureClass {
  /** The answers that make the class: `400`, `204→409`, `no answer`. */
  readonly answers: string;
  readonly reason: string;
  /** Runs of the kind that failed this way. */
  readonly runs: number;
  /** The smallest failing case found, its requests and what they got. */
  readonly fuzzCase: FuzzCase;
  readonly exchange: FuzzExchange;
  readonly outcomes: readonly FuzzOutcome[];
  readonly shrinks: number;
}

export interface CaseResult {
  readonly kind: CaseKind;
  readonly expect: Expectation;
  readonly what: string;
  readonly runs: number;
  readonly requests: number;
  /** Answers by status (`204`, `400`, `no answer`), or by sequence (`204→409`) for exchanges of several requests. */
  readonly answers: Readonly<Record<string, number>>;
  readonly verdict: Verdict;
  readonly failedRuns: number;
  readonly failures: readonly FailureClass[];
  /** What the pattern of passes and failures says about the receiver, when it is a known mistake. */
  readonly diagnosis: string | null;
  /** Why the verdict is `undecided`; null otherwise. */
  readonly undecided: string | null;
}

export interface FuzzReport {
  readonly seed: number;
  readonly results: readonly CaseResult[];
  /** Kinds of case with a failure. */
  readonly failed: number;
  /** Set when the run stopped early because the receiver stopped answering; the kinds after it did not run. */
  readonly stopped: string | null;
  /** One cause for the whole run (no correctly signed delivery accepted: the secret), in place of the kinds' diagnoses. */
  readonly diagnosis: string | null;
  /** The largest body Hookline delivers, which bounded the valid bodies: a replayed case is built with it. */
  readonly largestDeliveryBytes: number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * What an envelope adds to the largest event HOOKLINE_MAX_BODY accepts: version, id, type, metadata
 * and timestamp around its data (a 262,144-byte event went out as 262,255 bytes); 1 KiB leaves room
 * for long ids and metadata without sending anything Hookline could not.
 */
export const ENVELOPE_MARGIN_BYTES = 1024;

/** The largest body Hookline delivers, for a HOOKLINE_MAX_BODY. */
export const largestDelivery = (hooklineMaxBodyBytes: number): number => hooklineMaxBodyBytes + ENVELOPE_MARGIN_BYTES;
export const DEFAULT_RUNS = 200;

const is2xx = (outcome: FuzzOutcome) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
const answerText = (outcome: FuzzOutcome) => (outcome.status === null ? 'no answer' : String(outcome.status));
const shown = (outcome: FuzzOutcome) => (outcome.status === null ? `no answer (${outcome.error ?? 'unknown error'})` : String(outcome.status));

const REPEAT_WHY =
  'Hookline sends a webhook-id again whenever it saw no 2xx (a timeout, a lost answer), so a non-2xx to a repeat makes it retry an event you already processed until it is dead-lettered (timeout, 409, 409, 409 → dead_lettered); answer 2xx and skip the work';

/** The verdict on one case's answers: `reason` says what was wrong, null when right. */
export function judge(expect: Expectation, outcomes: readonly FuzzOutcome[], expectDuplicate: DuplicateExpectation = '2xx'): string | null {
  const [first, second] = outcomes;
  if (!first) return 'nothing was sent';
  switch (expect) {
    case 'accept':
      return is2xx(first) ? null : `expected 2xx, got ${shown(first)}`;
    case 'reject':
      if (first.status === null) return `expected a non-2xx answer, got ${shown(first)}`;
      return is2xx(first) ? `expected a non-2xx answer, got ${first.status}: the receiver accepted it` : null;
    case 'reject-or-close':
      return is2xx(first) ? `expected a non-2xx answer or a closed connection, got ${first.status}: the receiver accepted it` : null;
    case 'accept-after-forgery': {
      const judgement = judgeSquatting(outcomes, shown);
      return judgement !== null && 'fail' in judgement ? judgement.fail : null;
    }
    case 'accept-repeat':
      if (!is2xx(first)) return `the first send: expected 2xx, got ${shown(first)}`;
      if (expectDuplicate === '2xx' && second && !is2xx(second)) return `the repeated webhook-id got ${shown(second)}: ${REPEAT_WHY}`;
      return null;
    case 'accept-concurrent': {
      const accepted = outcomes.filter(is2xx).length;
      if (expectDuplicate === 'any') return accepted > 0 ? null : `none of ${outcomes.length} concurrent copies got a 2xx (${outcomes.map(shown).join(', ')})`;
      return accepted === outcomes.length ? null : `${outcomes.length - accepted} of ${outcomes.length} concurrent copies of one delivery got ${outcomes.filter((outcome) => !is2xx(outcome)).map(shown).join(', ')}: ${REPEAT_WHY}`;
    }
  }
}

/** Why answers that `judge` found no fault with still do not show the case passed; null when they do. */
export function undecidedBy(expect: Expectation, outcomes: readonly FuzzOutcome[]): string | null {
  if (expect !== 'accept-after-forgery') return null;
  const judgement = judgeSquatting(outcomes, shown);
  return judgement !== null && 'undecided' in judgement ? judgement.undecided : null;
}

/** A kind's own seed, from the run's seed and the kind's name: `--only KIND` replays the same cases. */
export function kindSeed(seed: number, kind: CaseKind): number {
  let hash = 0x811c9dc5;
  for (const char of kind) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return (seed ^ hash) | 0;
}

export const runsFor = (kind: CaseKind, runs: number): number => Math.min(runs, (CASE_SPECS[kind] as { maxRuns?: number }).maxRuns ?? runs);

function recordOf(fuzzCase: FuzzCase, exchange: FuzzExchange, outcomes: readonly FuzzOutcome[], ok: boolean): RunRecord {
  const request = exchange.requests[0]!;
  return { fuzzCase, ok, bodyBytes: request.body.length, splitInside: request.transfer ? splitsACharacter(request.body, request.transfer.splits) : false, outcomes };
}

async function sendSafely(send: FuzzOptions['send'], request: FuzzRequest): Promise<FuzzOutcome> {
  try {
    return await send(request);
  } catch (error) {
    return { status: null, error: error instanceof Error ? error.message : String(error) };
  }
}

async function sendExchange(send: FuzzOptions['send'], exchange: FuzzExchange): Promise<FuzzOutcome[]> {
  if (exchange.concurrent) return Promise.all(exchange.requests.map((request) => sendSafely(send, request)));
  const outcomes: FuzzOutcome[] = [];
  for (const request of exchange.requests) outcomes.push(await sendSafely(send, request));
  return outcomes;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const key = decodeSecret(options.secret);
  if (!key) throw new TypeError('the secret must be "whsec_" followed by base64');
  const now = options.now ?? Date.now;
  const kinds = options.kinds ?? CASE_KINDS;
  const total = kinds.reduce((sum, kind) => sum + runsFor(kind, options.runs), 0);
  const budget = options.maxShrinkRequests ?? 300;
  const expectDuplicate = options.expectDuplicate ?? '2xx';
  const largestDeliveryBytes = largestDelivery(options.hooklineMaxBodyBytes ?? defaultSettings().maxBodyBytes);
  // In every webhook-id, so that ids do not repeat across runs (a receiver may remember them).
  const runTag = Math.floor(now() / 1000).toString(36);
  const maxStreak = options.maxNoAnswerStreak ?? 3;
  let noAnswerStreak = 0;
  let stopped: string | null = null;
  let done = 0;
  let sequence = 0;
  const results: CaseResult[] = [];
  // Answers to every correctly signed request of the runs (not of shrinking): a wrong secret refuses them all.
  const signedAnswers: FuzzOutcome[] = [];

  for (const [kindIndex, kind] of kinds.entries()) {
    if (stopped !== null) break;
    const spec: { expect: Expectation; what: string } = CASE_SPECS[kind];
    const numRuns = runsFor(kind, options.runs);
    const seed = kindSeed(options.seed, kind);
    const answers: Record<string, number> = {};
    const records: RunRecord[] = [];
    const classes = new Map<string, { first: number; runs: number; reason: string; fuzzCase: FuzzCase; exchange: FuzzExchange; outcomes: FuzzOutcome[] }>();
    let requests = 0;
    let decided = 0;
    let undecided: string | null = null;

    /** Sends one case; returns its answers and what was wrong with them. */
    const attempt = async (fuzzCase: FuzzCase) => {
      const exchange = buildExchange(fuzzCase, {
        key,
        webhookId: `msg_${fuzzCase.delivery.idStem}_${runTag}${kindIndex.toString(36)}${(sequence++).toString(36)}`,
        nowSeconds: Math.floor(now() / 1000),
        toleranceSeconds: options.toleranceSeconds ?? 300,
        maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
        largestDeliveryBytes,
        ...(options.corpus ? { corpus: options.corpus } : {}),
        ...(options.customHeaders ? { customHeaders: options.customHeaders } : {}),
      });
      const outcomes = await sendExchange(options.send, exchange);
      requests += outcomes.length;
      for (const outcome of outcomes) {
        // A closed connection is a fair answer to an oversized body; elsewhere, a run of them means the receiver is down.
        if (outcome.status !== null) noAnswerStreak = 0;
        else if (spec.expect !== 'reject-or-close' && ++noAnswerStreak >= maxStreak) {
          stopped = `${counted(maxStreak, 'request')} in a row got no answer (last: ${outcome.error ?? 'unknown error'}); is the receiver running at the target?`;
        }
      }
      return { exchange, outcomes, tally: outcomes.map(answerText).join('→'), reason: judge(spec.expect, outcomes, expectDuplicate) };
    };

    let index = 0;
    await fc.check(
      fc.asyncProperty(caseArbitrary(kind), async (fuzzCase) => {
        const run = index++;
        if (stopped !== null) return true; // the receiver is gone: finish without sending
        const { exchange, outcomes, tally, reason } = await attempt(fuzzCase);
        answers[tally] = (answers[tally] ?? 0) + 1;
        signedAnswers.push(...signedOutcomes(spec.expect, outcomes));
        records.push(recordOf(fuzzCase, exchange, outcomes, reason === null));
        const unsure = reason === null ? undecidedBy(spec.expect, outcomes) : null;
        if (unsure !== null) undecided ??= unsure;
        else if (reason === null) decided++;
        if (reason !== null) {
          const known = classes.get(tally);
          if (known) known.runs++;
          else classes.set(tally, { first: run, runs: 1, reason, fuzzCase, exchange, outcomes });
        }
        options.onProgress?.({ done: ++done, total, kind, shrinking: false });
        return true;
      }),
      { seed, numRuns },
    );

    const failures: FailureClass[] = [];
    for (const [tally, found] of classes) {
      let smallest = { fuzzCase: found.fuzzCase, exchange: found.exchange, outcomes: found.outcomes, reason: found.reason };
      let shrinks = 0;
      // No answer is not shrunk: a receiver that is down fails every case the same way.
      if (!tally.includes('no answer') && stopped === null) {
        let spent = 0;
        const details = await fc.check(
          fc.asyncProperty(caseArbitrary(kind), async (fuzzCase) => {
            if (stopped !== null || ++spent > budget) return true; // out of budget: keep the smallest so far
            options.onProgress?.({ done, total, kind, shrinking: true });
            const again = await attempt(fuzzCase);
            if (again.reason === null || again.tally !== tally) return true;
            smallest = { fuzzCase, exchange: again.exchange, outcomes: again.outcomes, reason: again.reason };
            return false;
          }),
          { seed, numRuns: 1, path: String(found.first) },
        );
        shrinks = details.failed ? details.numShrinks : 0;
      }
      failures.push({ answers: tally, runs: found.runs, shrinks, ...smallest });
    }
    const failedRuns = records.filter((record) => !record.ok).length;
    results.push({
      kind,
      expect: spec.expect,
      what: spec.what,
      runs: records.length,
      requests,
      answers,
      // One run that could tell is enough to pass; none that could, and it is undecided.
      verdict: failures.length > 0 ? 'fail' : decided === 0 && undecided !== null ? 'undecided' : 'pass',
      undecided: failures.length === 0 && decided === 0 ? undecided : null,
      failedRuns,
      failures: failures.sort((a, b) => b.runs - a.runs),
      // With the shrunk cases: a diagnosis must fit the smallest failing delivery it is shown with.
      diagnosis: failedRuns > 0 ? diagnose(kind, [...records, ...failures.map((failure) => recordOf(failure.fuzzCase, failure.exchange, failure.outcomes, false))], largestDeliveryBytes) : null,
    });
  }
  const diagnosis = stopped === null ? refusedEverything(signedAnswers) : null;
  return {
    seed: options.seed,
    // One cause explains every failure: the kinds' own diagnoses would blame mistakes not shown.
    results: diagnosis === null ? results : results.map((result) => ({ ...result, diagnosis: null })),
    failed: results.filter((result) => result.verdict === 'fail').length,
    stopped,
    diagnosis,
    largestDeliveryBytes,
  };
}
