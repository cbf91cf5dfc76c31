/**
 * The id-squatting exchange and its judgement. A receiver that records a `webhook-id` before
 * verifying lets a forgery squat the id: the genuine delivery that follows is skipped as a repeat.
 * When repeats are refused, that shows as a non-2xx; when repeats get a 2xx, only the kind of 2xx
 * can show it. So the exchange carries its own controls: the forgery twice (a receiver that answers
 * a seen id before checking its signature accepts the second), the genuine delivery, then a fresh
 * delivery and its repeat, whose answers say what this receiver answers to each.
 */

/** The requests of an id-squatting exchange, in the order they are sent. */
export const SQUATTING_STEPS = ['forgery', 'forgery again', 'genuine', 'fresh control', 'repeated control'] as const;

/** Where the correctly signed requests start: the genuine delivery, then the controls. */
export const GENUINE_AFTER_FORGERY = SQUATTING_STEPS.indexOf('genuine');

interface Answer {
  readonly status: number | null;
}

export type SquattingJudgement = { readonly fail: string } | { readonly undecided: string } | null;

const is2xx = (answer: Answer | undefined) => answer !== undefined && answer.status !== null && answer.status >= 200 && answer.status < 300;
const text = (answer: Answer | undefined) => (answer === undefined ? 'nothing' : answer.status === null ? 'no answer' : String(answer.status));

/** `shown` describes an answer for a failure message (with its error when there was none). */
export function judgeSquatting<T extends Answer>(outcomes: readonly T[], shown: (answer: T) => string): SquattingJudgement {
  const [forgery, again, genuine, fresh, repeat] = outcomes;
  if (is2xx(forgery)) return { fail: `the forged request was accepted (${forgery!.status})` };
  if (is2xx(again)) return { fail: `the forged request, sent again with the same webhook-id, was accepted (${again!.status}): an id seen before is answered before its signature is checked` };
  if (!is2xx(genuine)) return { fail: `the genuine delivery, sent after a forged request with its webhook-id, got ${genuine ? shown(genuine) : 'nothing'}: the forgery blocked it` };
  if (!is2xx(fresh)) return { fail: `a valid delivery with a fresh webhook-id (the control) got ${fresh ? shown(fresh) : 'nothing'}` };
  if (fresh!.status === repeat?.status) {
    return { undecided: `the receiver answers a fresh delivery and a repeat alike (${text(fresh)}), so whether the genuine delivery after a forgery was processed or skipped as a repeat does not show; answer repeats with another status (200 for a repeat, 204 for a new one, say) to have it checked` };
  }
  if (genuine!.status === repeat?.status) {
    return { fail: `the genuine delivery, sent after a forged request with its webhook-id, got ${genuine!.status}, the answer this receiver gives a repeat (a fresh delivery gets ${text(fresh)}): the forgery recorded the id and the genuine delivery was skipped as already processed` };
  }
  if (genuine!.status === fresh!.status) return null;
  return { undecided: `the genuine delivery after a forgery got ${genuine!.status}, neither what a fresh delivery gets (${text(fresh)}) nor what a repeat gets (${text(repeat)})` };
}
