import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Why a JetStream publish got no answer. nats.js says "jetstream is not enabled" for any publish
 * nobody answered (NATS "no responders"), and times out when a server took it but no stream leader
 * answered. Right after a NATS server of a cluster is lost, that is an election, not a server without
 * JetStream: `hookline publish` said "jetstream is not enabled" while NATS elected a new leader.
 * Asked in turn: does the server run JetStream at all (its INFO), does the JetStream API answer
 * (its meta leader), and does a stream take the subject (then it has no leader now).
 */
export type UnansweredPublish =
  /** The server the client is connected to runs without JetStream. */
  | { kind: 'no_jetstream' }
  /** The JetStream API does not answer: the cluster is electing its meta leader (or has lost quorum). */
  | { kind: 'api_electing' }
  /** A stream takes the subject, and has no leader now: NATS is electing one. */
  | { kind: 'stream_electing'; stream: string }
  /** JetStream answers, and no stream takes the subject. */
  | { kind: 'no_stream' };

/** Whether a publish failed for want of an answer (no responders, or a timeout), as opposed to a refusal. */
export function isUnansweredPublish(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return name === 'JetStreamNotEnabled' || name === 'TimeoutError' || /no responders|timeout|not enabled/i.test(String(message));
}

/** How long each question to the JetStream API may take. */
const API_TIMEOUT_MS = 2_000;

export async function diagnoseUnansweredPublish(connection: NatsConnection, subject: string): Promise<UnansweredPublish> {
  if (connection.info?.jetstream !== true) return { kind: 'no_jetstream' };
  let stream: string | undefined;
  let manager;
  try {
    manager = await jetstreamManager(connection, { checkAPI: false, timeout: API_TIMEOUT_MS });
    for await (const name of manager.streams.names(subject)) {
      stream = name;
      break;
    }
  } catch {
    return { kind: 'api_electing' };
  }
  // A stream takes it, yet nobody answered: it has no leader (its leader may be back by now, and the
  // next publish goes through).
  return stream === undefined ? { kind: 'no_stream' } : { kind: 'stream_electing', stream };
}
