import { startReceiver, type Receiver } from '../../test/helpers/receiver.js';
import { fnv1a } from '../../src/sdk/partition.js';

/**
 * The webhook receivers (test/helpers/receiver.ts: every request recorded with its raw body, its
 * Standard Webhooks signature verified with the project's secret):
 * - `healthy` answers 204 at once;
 * - `flapping` answers 503 and 200 in turn, request after request;
 * - `slow` answers 200 after 200-1,500 ms (a delay fixed by the request's webhook-id and timestamp,
 *   so each attempt waits the same on every run).
 * A receipt is a request the receiver answered 2xx with a verified signature.
 */

export const RECEIVER_BEHAVIOURS = ['healthy', 'flapping', 'slow'] as const;
export type ReceiverBehaviour = (typeof RECEIVER_BEHAVIOURS)[number];

/** One request as the nemesis records it. */
export interface Receipt {
  project: string;
  webhookId: string;
  /** The event id in the envelope. */
  eventId: string;
  verified: boolean;
  /** Its `webhook-timestamp`, when the sender signed this attempt (epoch ms, to the second). */
  signedAt: number;
  /** When its body had arrived (epoch ms). */
  receivedAt: number;
  /** What the receiver answered, and when. */
  status: number;
  answeredAt: number;
}

export interface NemesisReceiver {
  readonly behaviour: ReceiverBehaviour;
  readonly url: string;
  readonly receiver: Receiver;
  /** Every request so far, in arrival order. */
  receipts(project: string): Receipt[];
}

const SLOW_MIN_MS = 200;
const SLOW_SPREAD_MS = 1_300;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startNemesisReceiver(behaviour: ReceiverBehaviour): Promise<NemesisReceiver> {
  const answers: Array<{ status: number; answeredAt: number }> = [];
  const answer = (index: number, status: number) => {
    answers[index] = { status, answeredAt: Date.now() };
    return { status };
  };
  const receiver = await startReceiver({
    autoClose: false,
    async respond(delivery, index) {
      if (behaviour === 'flapping') return answer(index, index % 2 === 0 ? 503 : 200);
      if (behaviour === 'slow') {
        await pause(SLOW_MIN_MS + (fnv1a(`${delivery.webhookId}.${delivery.webhookTimestamp}`) % SLOW_SPREAD_MS));
        return answer(index, 200);
      }
      return answer(index, 204);
    },
  });
  return {
    behaviour,
    url: receiver.url,
    receiver,
    receipts(project) {
      return receiver.received.map((delivery, index) => ({
        project,
        webhookId: delivery.webhookId,
        eventId: delivery.envelope.id,
        verified: delivery.verified,
        signedAt: Number(delivery.webhookTimestamp) * 1000,
        receivedAt: delivery.receivedAt,
        status: answers[index]?.status ?? 0,
        answeredAt: answers[index]?.answeredAt ?? 0,
      }));
    },
  };
}
