import type { Logger } from '../logger.js';
import type { HooklineStore } from '../store/store.js';
import type { AttemptOutcome, SendRequest } from '../transport/http-sender.js';
import type { Tracing } from '../tracing/tracing.js';
import type { Clock } from './clock.js';
import type { DeliveryScheduler } from './delivery-scheduler.js';
import type { EngineMetrics } from './engine-metrics.js';
import type { IngestsInFlight } from './ingests-in-flight.js';
import type { OperationalNotify } from './operational-events.js';
import type { OutcomeReport } from './outcome-reports.js';
import type { Webhook } from './webhook-settings.js';
import type { WorkTurns } from './work-turns.js';

/** What a project's actor and its delivery lifecycle are given: their side effects and settings. */

export interface DeliverySender {
  send(request: SendRequest): Promise<AttemptOutcome>;
}

export interface ProjectActorDeps {
  store: HooklineStore;
  scheduler: DeliveryScheduler;
  sender: DeliverySender;
  clock: Clock;
  random: () => number;
  metrics: EngineMetrics;
  logger: Logger;
  retrySchedule: readonly number[];
  retryJitter: boolean;
  disableAfterMs: number;
  endpointConcurrency: number;
  /** Waiting deliveries one project may have (HOOKLINE_MAX_WAITING_PER_PROJECT). */
  maxWaitingPerProject: number;
  /** Waiting deliveries a lifecycle holds in memory at most; the rest wait on disk (delivery-window.ts). */
  deliveryWindow: number;
  /** Shared by every actor of the engine: how many deliveries are held in memory (a gauge). */
  heldDeliveries: { count: number };
  /** Counted failures in a row that open the endpoint's circuit (circuit-breaker.ts); 0 turns it off. */
  circuitFailures: number;
  /** Wait after an opening or a failed probe before the next probe. */
  circuitProbeIntervalMs: number;
  /** Shared by every actor of the engine: deferred delivery work, in turns taken round-robin (work-turns.ts). */
  turns: WorkTurns;
  /** Shared by every actor of the engine: ingests of event ids not yet stored and replicated. */
  ingestsInFlight: IngestsInFlight;
  /** Spans of attempts and changes; null when the node exports no traces (the usual case). */
  tracing: Tracing | null;
  /**
   * Ids of deliveries created before the answer are past retention now (the engine's one rule, as
   * its prune and the changelog snapshots apply it): retry and redrive leave those terminal alone.
   */
  retentionCutoffId: () => string;
  /**
   * Whether the node has begun to stop (SIGTERM): from that moment it takes nothing new, before
   * its actors drain (which waits for the transports to stop).
   */
  nodeStopping: () => boolean;
  /**
   * Cluster mode: whether this node may act for the project right now (its partition's lease is
   * valid). Checked before every attempt, so a node that lost its lease starts none.
   * @default always
   */
  mayAct?: () => boolean;
  /**
   * HOOKLINE_NATS_OUTCOMES: publishes a final outcome or an endpoint change on NATS, in the
   * background (a failure is counted, never waited for). @default none: outcomes are not published
   */
  publishOutcome?: (report: OutcomeReport) => void;
}

/** The project's webhook configuration as the actor holds it. */
export interface WebhookHolder {
  webhook(): Webhook | undefined;
  /** Replaces the configuration (endpoint health: failing since, disabled). */
  save(webhook: Webhook): Promise<void>;
  /**
   * Raises operational events (endpoint disabled or recovered, delivery dead-lettered). Given, the
   * lifecycle also governs the endpoint's health: it disables an endpoint that keeps failing or
   * answers 410. Left out for the operational deliveries themselves, which never report on themselves.
   */
  notify?: OperationalNotify;
}
