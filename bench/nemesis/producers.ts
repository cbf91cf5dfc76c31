import type { NatsConnection } from '@nats-io/transport-node';
import { HooklineClient } from '../../src/sdk/client.js';
import { publishEvent } from '../../src/sdk/nats.js';

/**
 * The producers, each an open loop at a fixed rate: event n is due at n / rate seconds, whatever
 * the cluster does, and is sent again (same id) until it is acknowledged, so a fault shows as
 * latency and retries, never as a producer that slowed down to match. Every send and every
 * acknowledgement is recorded: the checks hold the cluster to what it acknowledged.
 * - `http`: `POST /v1/events` (the SDK's `sendEvent`) to the nodes in turn, through their links;
 *   a retry goes to the next node. A send unanswered within 5 s counts as failed.
 * - `nats`: the SDK's `publishEvent` on the project's partition subject, straight to the NATS
 *   servers; acknowledged by JetStream. A publish unanswered within 2 s counts as failed.
 * Events are spread over the projects in turn. At most `maxInFlight` events wait for their ack per
 * producer; one due while that many wait is not sent (counted as shed).
 */

export type ProducerKind = 'http' | 'nats';

export interface ProducedEvent {
  id: string;
  project: string;
  via: ProducerKind;
  /** First send (epoch ms). */
  sentAt: number;
  tries: number;
  /** When the first acknowledgement came (epoch ms); null when none did. */
  ackedAt: number | null;
  /** The node whose 202/200 acknowledged it (http). */
  ackedBy: string | null;
  /** The delivery id the acknowledgement named (http). */
  deliveryId: string | null;
  /** The stream sequence JetStream stored it at (nats). */
  natsSeq: number | null;
  lastError: string | null;
}

export interface ProducerTarget {
  id: string;
  url: string;
}

export interface ProjectKeys {
  projectId: string;
  apiKey: string;
}

export interface Producer {
  readonly kind: ProducerKind;
  readonly events: ReadonlyMap<string, ProducedEvent>;
  /** Events due while `maxInFlight` waited. */
  readonly shed: number;
  /** Stops sending new events; those waiting for an ack keep being sent until `giveUp()`. */
  stop(): void;
  /** Stops retrying; resolves once nothing is in flight. */
  giveUp(): Promise<void>;
}

export interface ProducerOptions {
  kind: ProducerKind;
  seed: number;
  /** Events per second. */
  rate: number;
  maxInFlight: number;
  projects: readonly ProjectKeys[];
  /** http: the nodes. */
  targets?: readonly ProducerTarget[];
  /** nats: a connection and the cluster's subject layout. */
  nats?: { connection: NatsConnection; subjectPrefix: string; partitions: number };
}

const RETRY_PAUSE_MS = 250;
const HTTP_TIMEOUT_MS = 5_000;
const NATS_TIMEOUT_MS = 2_000;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const message = (error: unknown) => (error instanceof Error ? `${(error as { code?: string }).code ?? error.name}: ${error.message}` : String(error)).slice(0, 300);

export function startProducer(options: ProducerOptions): Producer {
  const events = new Map<string, ProducedEvent>();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let givenUp = false;
  let shed = 0;
  const clients = new Map<string, HooklineClient>();
  const clientFor = (target: ProducerTarget, project: ProjectKeys) => {
    const key = `${target.id} ${project.projectId}`;
    let client = clients.get(key);
    if (!client) clients.set(key, (client = new HooklineClient({ baseUrl: target.url, apiKey: project.apiKey })));
    return client;
  };

  /** One try; the event's record is updated on an ack. */
  const sendOnce = async (event: ProducedEvent, body: { id: string; type: 'service.trigger.event'; data: Record<string, unknown> }, project: ProjectKeys, turn: number) => {
    if (options.kind === 'http') {
      const targets = options.targets!;
      const target = targets[turn % targets.length]!;
      const answer = await clientFor(target, project).sendEvent(body, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
      event.ackedBy = target.id;
      event.deliveryId = answer.deliveryId;
    } else {
      const { connection, subjectPrefix, partitions } = options.nats!;
      event.natsSeq = (await publishEvent(connection, project.projectId, body, { subjectPrefix, partitions, timeoutMs: NATS_TIMEOUT_MS })).seq;
    }
    event.ackedAt = Date.now();
  };

  const produce = async (n: number) => {
    const project = options.projects[n % options.projects.length]!;
    const id = `evt_s${options.seed}_${options.kind}_${n}`;
    const event: ProducedEvent = { id, project: project.projectId, via: options.kind, sentAt: Date.now(), tries: 0, ackedAt: null, ackedBy: null, deliveryId: null, natsSeq: null, lastError: null };
    events.set(id, event);
    const body = { id, type: 'service.trigger.event' as const, data: { n, via: options.kind } };
    while (!givenUp) {
      try {
        await sendOnce(event, body, project, n + event.tries++);
        return;
      } catch (error) {
        event.lastError = message(error);
        await pause(RETRY_PAUSE_MS);
      }
    }
  };

  const started = Date.now();
  const loop = (async () => {
    for (let n = 0; !stopped; n++) {
      const dueAt = started + (n * 1000) / options.rate;
      if (dueAt > Date.now()) await pause(dueAt - Date.now());
      if (stopped) break;
      if (inFlight.size >= options.maxInFlight) {
        shed++;
        continue;
      }
      const sending = produce(n);
      inFlight.add(sending);
      void sending.finally(() => inFlight.delete(sending));
    }
  })();

  return {
    kind: options.kind,
    events,
    get shed() {
      return shed;
    },
    stop() {
      stopped = true;
    },
    async giveUp() {
      stopped = true;
      givenUp = true;
      await loop;
      await Promise.all(inFlight);
    },
  };
}
