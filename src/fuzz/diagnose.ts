/**
 * Known receiver mistakes, recognised from which cases of a kind passed and which failed. A
 * diagnosis is a hint next to the verdict, never the verdict itself: it is given only when the
 * pattern fits (every failure has the trait, and cases without it passed).
 */
import type { CaseKind, Expectation, FuzzCase } from './cases.js';
import { GENUINE_AFTER_FORGERY } from './squatting.js';

/** One run of a kind, as the diagnosis sees it. */
export interface RunRecord {
  readonly fuzzCase: FuzzCase;
  readonly ok: boolean;
  /** Bytes of the (first) request's body. */
  readonly bodyBytes: number;
  /** Whether a write boundary fell inside a multi-byte character. */
  readonly splitInside: boolean;
  readonly outcomes: readonly { readonly status: number | null }[];
}

const NON_ASCII_REJECTED =
  'bodies with non-ASCII text (raw UTF-8, as Hookline sends it) rejected: you read the body as latin1/binary (or re-encode it) before verifying; verify the raw bytes, not a string decoded from them in another encoding';

/** When every failure has `trait` and some run without it passed. */
function only(records: readonly RunRecord[], trait: (record: RunRecord) => boolean): boolean {
  const failed = records.filter((record) => !record.ok);
  return failed.length > 0 && failed.every(trait) && records.some((record) => record.ok && !trait(record));
}

const rotation = (record: RunRecord) => record.fuzzCase as Extract<FuzzCase, { kind: 'valid-rotation' }>;
const positionOf = (record: RunRecord) => rotation(record).position % rotation(record).candidates;

/**
 * `records` holds each failure class's shrunk case too, so that a diagnosis fits the smallest
 * failing delivery shown with it. `largestDeliveryBytes`: the largest body Hookline delivers,
 * which a receiver's body limit must take.
 */
export function diagnose(kind: CaseKind, records: readonly RunRecord[], largestDeliveryBytes: number): string | null {
  const failed = records.filter((record) => !record.ok);
  if (failed.length === 0) return null;
  switch (kind) {
    case 'valid':
      return null;
    case 'valid-utf8':
      return NON_ASCII_REJECTED;
    case 'valid-chunked':
      // A 413 is the receiver's body limit speaking, whatever the pieces were.
      if (failed.every((record) => record.outcomes[0]?.status === 413)) {
        const smallest = Math.min(...failed.map((record) => record.bodyBytes));
        return `a body of ${smallest} bytes answered 413: your body limit is below what Hookline can send (bodies up to ${largestDeliveryBytes} bytes: HOOKLINE_MAX_BODY plus the envelope); raise it to at least that`;
      }
      if (only(records, (record) => record.splitInside)) {
        return 'bodies that arrive in pieces cut inside a UTF-8 character rejected: you decode each chunk on its own (body += chunk); collect the Buffers and verify Buffer.concat(chunks)';
      }
      // Only when a smaller body passed: size is then what the failures share.
      if (records.some((record) => record.ok && record.bodyBytes < Math.min(...failed.map((failure) => failure.bodyBytes)))) {
        return 'large bodies within --max-body rejected: check your body limit and that you read the whole body before verifying';
      }
      // Every chunked body holds non-ASCII text: a failure with no write boundary inside a character is the text's own.
      if (failed.some((record) => !record.splitInside)) return NON_ASCII_REJECTED;
      return null;
    case 'valid-rotation':
      if (only(records, (record) => rotation(record).candidates > 1 && positionOf(record) < rotation(record).candidates - 1)) {
        return 'accepted only when the right signature is the last candidate: you check only the last one; Hookline signs with every secret in grace, newest first, and any candidate may be yours';
      }
      if (only(records, (record) => positionOf(record) >= 2)) {
        return 'accepted only when the right signature is among the first two candidates: you check only two; after rotations Hookline sends 3 or more, newest first';
      }
      if (only(records, (record) => rotation(record).candidates > 1)) {
        return 'rejected whenever there are several candidates: you require every candidate to match, or read only one; a delivery is valid when any v1 candidate matches';
      }
      return null;
    case 'id-squatting':
      if (failed.every((record) => record.outcomes[0]?.status !== null && !(record.outcomes[0]!.status! >= 200 && record.outcomes[0]!.status! < 300))) {
        return 'you record the webhook-id before verifying the signature: a forged request carrying a real id blocks the genuine delivery; record ids only after verification succeeds';
      }
      return null;
    case 'repeated-webhook-id':
    case 'concurrent-duplicates':
      return 'a repeated webhook-id is refused: de-duplicate by answering 2xx without processing again, never with 409 (or pass --expect-duplicate any if something else answers repeats)';
    case 'stale-timestamp':
      return 'an old timestamp is accepted: your tolerance is wider than --tolerance (see the measured timestamp window), or not checked';
    case 'future-timestamp':
      return 'a timestamp in the future is accepted: you check only that it is not too old; reject timestamps more than the tolerance ahead too';
    case 'bad-base64':
      if (failed.every((record) => (record.fuzzCase as Extract<FuzzCase, { kind: 'bad-base64' }>).damage.how === 'truncate')) {
        return 'a signature cut short is accepted: you compare a prefix (startsWith, or up to the shorter length) instead of the whole signature';
      }
      return 'a broken signature is accepted: compare the whole decoded signature, in constant time';
    case 'unknown-version':
      return 'the right signature under another version than v1 is accepted: you ignore the version prefix, or match vacuously when no v1 candidate is present (every() over none is true)';
    case 'missing-header':
      if (failed.every((record) => (record.fuzzCase as Extract<FuzzCase, { kind: 'missing-header' }>).header === 'webhook-signature')) {
        return 'a request without webhook-signature is accepted: you skip verification when the header is missing';
      }
      return 'a request missing a webhook-* header is accepted: a delivery without all three headers is not verified';
    case 'reserialised-json':
      return 'JSON re-spelled after signing is accepted: you fall back to verifying re-serialised JSON, which a forger can exploit; verify the raw bytes only';
    case 'oversized-body':
      return 'a body over --max-body is accepted: no size limit (a sender can make you buffer any amount); refuse it with 413';
    case 'tampered-body':
    case 'wrong-secret':
    case 'garbage-header':
      return 'the signature is not checked, or not over these bytes with this secret';
  }
}

/** The answers to the correctly signed requests of one run: what a right secret must have had accepted. */
export function signedOutcomes<T>(expect: Expectation, outcomes: readonly T[]): readonly T[] {
  switch (expect) {
    case 'accept':
      return outcomes.slice(0, 1);
    case 'accept-after-forgery':
      return outcomes.slice(GENUINE_AFTER_FORGERY);
    case 'accept-repeat':
    case 'accept-concurrent':
      return outcomes;
    default:
      return [];
  }
}


/**
 * The one cause when no correctly signed request got a 2xx: the receiver verifies with another
 * secret (or refuses everything), and every kind expecting a 2xx fails for that alone, so the
 * kinds' own diagnoses would blame mistakes the receiver may not have. Null when any was accepted,
 * or none was sent, or none was answered (a receiver that is down is said otherwise).
 */
export function refusedEverything(answers: readonly { readonly status: number | null }[]): string | null {
  if (answers.length === 0 || answers.some((answer) => answer.status !== null && answer.status >= 200 && answer.status < 300)) return null;
  const byStatus = new Map<string, number>();
  for (const answer of answers) {
    const text = answer.status === null ? 'no answer' : String(answer.status);
    byStatus.set(text, (byStatus.get(text) ?? 0) + 1);
  }
  if (!answers.some((answer) => answer.status !== null)) return null;
  const got = byStatus.size === 1 ? `${[...byStatus.keys()][0]} to all ${answers.length}` : `${[...byStatus].map(([status, count]) => `${status}×${count}`).join(', ')} to the ${answers.length}`;
  return `no correctly signed delivery was accepted: check the secret; the receiver answered ${got}`;
}
