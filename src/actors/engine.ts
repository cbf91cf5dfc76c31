import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Settings } from '../config/settings.js';
import type { Tracing } from '../tracing/tracing.js';
import { HooklineError } from '../errors.js';
import type { Logger } from '../logger.js';
import { newProjectId, newSortableId } from '../store/ids.js';
import type { DeliveryStatus } from '../machines/index.js';
import { countDeadLetters, countDeliveriesByStatus } from '../store/delivery-query.js';
import type { DeadLetterFilter, UnstoredSteps } from '../store/delivery-query.js';
import type { DeliveryRecord, ProjectRecord } from '../store/records.js';
import { HooklineStore } from '../store/store.js';
import type { ChangelogRestore } from '../store/changelog-restore.js';
import { isPastRetention, retentionCutoffId, withinRetention } from '../store/retention.js';
import { createDataDir } from '../store/data-dir.js';
import type { EventInput } from '../transport/event-input.js';
import { isBlockedAddress, isBlockedLiteralHost } from '../transport/address-guard.js';
import { HttpSender } from '../transport/http-sender.js';
import type { BatchEventSink, InboundTransport, IngestResult, Rejection } from '../transport/types.js';
import { shuttingDownError } from './admission.js';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { publishInBackground } from './outcome-reports.js';
import type { OutcomeReport, OutcomeSink } from './outcome-reports.js';
import { EngineMetrics } from './engine-metrics.js';
import { IngestsInFlight } from './ingests-in-flight.js';
import { WorkTurns } from './work-turns.js';
import type { DeliverySender } from './project-actor.js';
import { ProjectActor } from './project-actor.js';
import { WAITING_STATUSES } from './delivery-lifecycle.js';
import { operationalStoreId, projectOfStoreId } from './operational-events.js';
import { settled } from '../settled.js';

export interface EngineOptions {
  settings: Settings;
  /** @default the system clock */
  clock?: Clock;
  /** @default an undici HttpSender with the settings' timeout and concurrency */
  sender?: DeliverySender & { close?(): Promise<void> };
  /** @default Math.random (retry jitter) */
  random?: () => number;
  logger?: Logger;
  /** Sources of events besides direct `ingest` calls. */
  transports?: InboundTransport[];
  /** LMDB map size for the store (tests use a small one to exercise a full disk). */
  mapSize?: number;
  /**
   * Cluster mode: which projects this node owns right now. Set, the engine resumes nothing at
   * start (the cluster node resumes partitions as it takes them) and refuses to act for others.
   * @default every project is this node's
   */
  ownership?: { ownsProject(projectId: string): boolean };
  /** HOOKLINE_NATS_OUTCOMES: where final outcomes and endpoint changes are published. @default none */
  outcomes?: OutcomeSink;
  /**
   * Spans of ingests, attempts and changes (tracing/tracing.ts), shut down (flushed) by `stop`.
   * @default null, no tracing
   */
  tracing?: Tracing | null;
}

const DEFAULT_PROJECT_ID = 'default';

/** Projects shared by several nodes (a cluster's directory), where one is created once. */
export interface SharedProjects {
  /**
   * Creates the project's shared entry unless it exists, by compare-and-set: true when this node
   * made it (it then stores it with its key, as any project), false when another node did first
   * (mirrored here before it resolves).
   */
  claimProject(project: ProjectRecord): Promise<boolean>;
}
const PRUNE_INTERVAL_MS = 10 * 60_000;
const PRUNE_BATCH = 10_000;

const silentLogger: Logger = { info() {}, warn() {}, error() {} };

export function hashApiKey(apiKey: string): string {
  // One-shot: every API request hashes its key, and a Hash object cost about 0.5 µs more.
  return hash('sha256', apiKey, 'hex');
}

export function generateApiKey(): string {
  return `hk_${randomBytes(32).toString('base64url')}`;
}

/**
 * The delivery engine of one node: the store, the scheduler, the outbound sender and one actor per
 * project, started from what LMDB holds. Transports feed it through `ingest` (it is their EventSink).
 */
export class Engine implements BatchEventSink {
  readonly store: HooklineStore;
  readonly metrics: EngineMetrics;
  readonly scheduler: DeliveryScheduler;
  private readonly actors = new Map<string, ProjectActor>();
  private readonly clock: Clock;
  private readonly sender: DeliverySender & { close?(): Promise<void> };
  private readonly logger: Logger;
  private readonly random: () => number;
  /** Deliveries held in memory by every actor (a gauge); the rest of the waiting ones are on disk. */
  private readonly heldDeliveries = { count: 0 };
  private readonly ingestsInFlight = new IngestsInFlight();
  /** Deferred delivery work of every actor, taken in turns (work-turns.ts). */
  private readonly turns: WorkTurns;
  private readonly ownership: EngineOptions['ownership'];
  private readonly transports: InboundTransport[];
  private readonly publishOutcome: ((report: OutcomeReport) => void) | undefined;
  readonly tracing: Tracing | null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private stopping: Promise<void> | null = null;

  private constructor(
    readonly settings: Settings,
    options: EngineOptions,
  ) {
    createDataDir(settings.dataDir);
    this.store = new HooklineStore({ path: settings.dataDir, maxDataBytes: settings.maxDataBytes, ...(options.mapSize ? { mapSize: options.mapSize } : {}) });
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.turns = new WorkTurns((error) => this.logger.error({ err: error }, 'deferred delivery work failed'));
    this.sender =
      options.sender ??
      new HttpSender({
        timeoutMs: settings.deliveryTimeoutMs,
        maxConnectionsPerOrigin: settings.endpointConcurrency,
        ...(settings.allowPrivateNetworks ? {} : { isBlockedAddress }),
      });
    this.transports = options.transports ?? [];
    this.tracing = options.tracing ?? null;
    this.scheduler = new DeliveryScheduler(this.clock, (entry) => this.actors.get(projectOfStoreId(entry.projectId))?.onDue(entry.deliveryId, entry.dueAt));
    this.metrics = new EngineMetrics({
      liveDeliveries: () => this.heldDeliveries.count,
      waitingDeliveries: () => this.sumOverActors((actor) => actor.waiting),
      readyQueueDepth: () => this.sumOverActors((actor) => actor.readyCount),
      scheduledRetries: () => this.scheduler.size,
      // Of the projects this node serves: in a cluster its store keeps what it served before a partition moved.
      deadLettered: () => this.store.countByStatus('dead_lettered', (projectId) => this.owns(projectId)),
      circuitsOpen: () => this.sumOverActors((actor) => (actor.circuit().state === 'closed' ? 0 : 1)),
    });
    this.random = options.random ?? Math.random;
    this.ownership = options.ownership;
    this.publishOutcome = options.outcomes && publishInBackground(options.outcomes, () => this.metrics.outcomePublishFailures.inc());
  }

  /**
   * A partition's changelog laid into the store (a cluster takeover), in slices that take turns
   * with the node's other deferred work: the node's other projects are served meanwhile.
   */
  restoring(partition: number): ChangelogRestore {
    return this.store.restoring(partition, this.turns);
  }

  /** Opens the store, resumes every live delivery, then starts the transports. */
  static async start(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options.settings, options);
    if (!options.ownership) engine.resumeProjects(() => true);
    for (const transport of engine.transports) await transport.start(engine);
    engine.pruneTimer = setInterval(() => void engine.pruneExpired(), PRUNE_INTERVAL_MS);
    engine.pruneTimer.unref();
    return engine;
  }

  private sumOverActors(read: (actor: ProjectActor) => number): number {
    let total = 0;
    for (const actor of this.actors.values()) total += read(actor);
    return total;
  }

  /** The actor of a project that exists; created on first use. */
  private owns(projectId: string): boolean {
    return this.ownership?.ownsProject(projectId) ?? true;
  }

  actorFor(projectId: string): ProjectActor {
    let actor = this.actors.get(projectId);
    if (!actor) {
      if (!this.owns(projectId)) throw new HooklineError('HOOKLINE_ERR_PARTITION_MOVING', `project ${projectId} is not served by this node right now; retry shortly`, { retryAfterSeconds: 1 });
      if (!this.store.getProject(projectId)) throw new HooklineError('HOOKLINE_ERR_UNKNOWN_PROJECT', `unknown project ${projectId}`);
      actor = new ProjectActor(projectId, {
        store: this.store,
        scheduler: this.scheduler,
        sender: this.sender,
        clock: this.clock,
        random: this.random,
        metrics: this.metrics,
        logger: this.logger,
        retrySchedule: this.settings.retrySchedule,
        retryJitter: this.settings.retryJitter,
        disableAfterMs: this.settings.disableAfterMs,
        endpointConcurrency: this.settings.endpointConcurrency,
        maxWaitingPerProject: this.settings.maxWaitingPerProject,
        deliveryWindow: this.settings.deliveryWindow,
        heldDeliveries: this.heldDeliveries,
        circuitFailures: this.settings.circuitFailures,
        circuitProbeIntervalMs: this.settings.circuitProbeIntervalMs,
        ingestsInFlight: this.ingestsInFlight,
        tracing: this.tracing,
        turns: this.turns,
        retentionCutoffId: () => this.retentionCutoffId(),
        nodeStopping: () => this.stopping !== null,
        ...(this.ownership ? { mayAct: () => this.owns(projectId) } : {}),
        ...(this.publishOutcome ? { publishOutcome: this.publishOutcome } : {}),
      });
      this.actors.set(projectId, actor);
    }
    return actor;
  }

  ingest(projectId: string, input: EventInput, traceparent?: string): Promise<IngestResult> {
    if (this.stopping) return Promise.reject(shuttingDownError());
    // actorFor throws for a project that does not exist (or moved): a rejection, like every refusal.
    return settled(() => this.actorFor(projectId).ingest(input, traceparent));
  }

  async ingestBatch(projectId: string, inputs: readonly EventInput[], traceparent?: string): Promise<Array<PromiseSettledResult<IngestResult>>> {
    if (this.stopping) throw shuttingDownError();
    const actor = this.actorFor(projectId);
    // Asked once for the batch, so that a node already refusing answers it with one 503. A limit
    // reached during the batch refuses the events after it on their own (they show in a 207).
    const refusal = actor.admissionRefusal(inputs.some((input) => actor.matches(input)));
    if (refusal) throw refusal;
    // Every event is issued in this one event-loop turn, in one LMDB batch (one commit, one fsync);
    // copies of one id within the batch meet in the actor's de-duplication. An event whose ingest
    // throws is refused alone: the batch's others are issued already.
    return Promise.allSettled(this.store.ingestTogether(() => inputs.map((input) => settled(() => actor.ingest(input, traceparent)))));
  }

  /** A delivery as the API shows it: as stored, with the steps its actor has not stored yet. */
  readDelivery(projectId: string, deliveryId: string): DeliveryRecord | undefined {
    const actor = this.actors.get(projectId);
    return actor ? actor.readDelivery(deliveryId) : this.store.getDelivery(projectId, deliveryId);
  }

  /** Steps a project's actor has made and not stored yet (for `queryDeliveries`). */
  unstoredSteps(projectId: string): UnstoredSteps {
    const actor = this.actors.get(projectId);
    if (!actor) return { changes: () => [], idsShownAs: () => [] };
    return {
      changes: (deliveryId) => actor.unstoredChanges(deliveryId),
      idsShownAs: (status) => [...actor.statusesNotStored()].filter(({ shown }) => shown === status).map(({ id }) => id),
    };
  }

  /**
   * A redrive's dry run: how many deliveries it would start now, and whether they fit in the room
   * HOOKLINE_MAX_WAITING_PER_PROJECT leaves the project (a redrive that does not fit is refused whole).
   */
  redrivePreview(projectId: string, filter: DeadLetterFilter): { wouldRedrive: number; fits: boolean } {
    const actor = this.actors.get(projectId);
    // Without an actor nothing of the project is in memory: the store answers alone.
    const wouldRedrive = actor ? actor.recovery.redrivePreview(filter) : countDeadLetters(this.store, projectId, withinRetention(filter, this.retentionCutoffId()));
    const waiting = actor ? actor.waiting : this.store.deliveryTables.countInStatuses(projectId, WAITING_STATUSES);
    return { wouldRedrive, fits: wouldRedrive <= Math.max(0, this.settings.maxWaitingPerProject - waiting) };
  }

  /** How many of a project's deliveries are in each status, an attempt in flight counted as `delivering`. */
  countDeliveriesByStatus(projectId: string): Record<DeliveryStatus, number> {
    const counts = countDeliveriesByStatus(this.store, projectId);
    for (const { id, shown } of this.actors.get(projectId)?.statusesNotStored() ?? []) {
      // What the index counted is read back, not remembered: a commit can be visible before its
      // writer learns that it landed.
      const indexed = this.store.getDeliveryHead(projectId, id)?.status;
      if (indexed === undefined || indexed === shown) continue;
      counts[indexed]--;
      counts[shown]++;
    }
    return counts;
  }

  async reject(rejection: Rejection): Promise<void> {
    const now = this.clock.now();
    await this.store.putRejectedEvent({ ...rejection, id: newSortableId('rej', now), receivedAt: now });
    this.metrics.eventsRejected.inc({ reason: rejection.reason });
    this.logger.warn({ projectId: rejection.projectId, source: rejection.source, reason: rejection.reason }, 'inbound event rejected');
  }

  // Projects and keys ---------------------------------------------------------------------------

  /** The project a bearer key belongs to, or null. Keys are stored only as SHA-256 hashes. */
  authenticate(apiKey: string): string | null {
    return this.store.projectIdForKeyHash(hashApiKey(apiKey)) ?? null;
  }

  /** True when `candidate` is the admin key; compared in constant time. */
  isAdminKey(candidate: string): boolean {
    const adminKey = this.settings.adminKey;
    if (!adminKey) return false;
    const expected = createHash('sha256').update(adminKey).digest();
    return timingSafeEqual(expected, createHash('sha256').update(candidate).digest());
  }

  async createProject(name: string, apiKey: string = generateApiKey(), projectId: string = newProjectId(this.clock.now())): Promise<{ projectId: string; apiKey: string }> {
    await this.store.createProject({ id: projectId, name, createdAt: this.clock.now() }, hashApiKey(apiKey));
    return { projectId, apiKey };
  }

  /** Adds another key to an existing project (CLI `keys create`). */
  async addApiKey(projectId: string, apiKey: string = generateApiKey()): Promise<string> {
    if (!this.store.getProject(projectId)) throw new HooklineError('HOOKLINE_ERR_NOT_FOUND', `unknown project ${projectId}`);
    await this.store.addApiKey(hashApiKey(apiKey), projectId);
    return apiKey;
  }

  /**
   * Makes sure the project `default` exists and that HOOKLINE_API_KEY (when set) opens it.
   * Returns a generated key when the project was created without one, to be shown once. With
   * `shared` (a cluster's directory), only the node that claims the project there creates it.
   */
  async ensureDefaultProject(shared?: SharedProjects): Promise<{ generatedApiKey: string | null }> {
    const configuredKey = this.settings.apiKey;
    if (!this.store.getProject(DEFAULT_PROJECT_ID)) {
      // In a cluster, nodes started together all find it missing: the one that claims it makes the key.
      const project: ProjectRecord = { id: DEFAULT_PROJECT_ID, name: 'default', createdAt: this.clock.now() };
      if (!shared || (await shared.claimProject(project))) {
        const apiKey = configuredKey ?? generateApiKey();
        await this.store.createProject(project, hashApiKey(apiKey));
        return { generatedApiKey: configuredKey ? null : apiKey };
      }
    }
    if (configuredKey && this.authenticate(configuredKey) !== DEFAULT_PROJECT_ID) {
      // Added, never swapped: removing keys at start because a variable changed could lock every
      // client out. An operator who changed it meaning a rotation learns that the old keys remain.
      const earlierKeys = this.store.apiKeyCount(DEFAULT_PROJECT_ID);
      await this.addApiKey(DEFAULT_PROJECT_ID, configuredKey);
      if (earlierKeys > 0) {
        this.logger.warn(
          { projectId: DEFAULT_PROJECT_ID, earlierKeys },
          `HOOKLINE_API_KEY was added to project "default" as a new key; the keys it had before (earlierKeys) still work: revoke each one no longer used with printf '%s' "$OLD_KEY" | hookline keys revoke --key-stdin`,
        );
      }
    }
    return { generatedApiKey: null };
  }

  // Start, retention, stop ----------------------------------------------------------------------

  /**
   * Starts the projects matching `owns` that have waiting deliveries (at start, or as this node
   * takes their partitions over): each one's actor reads what is due soon into memory, and the
   * rest waits on disk (delivery-window.ts). Their count is finished in turns (delivery-tables.ts,
   * `countInStatusesInTurns`) and logged once done.
   */
  resumeProjects(owns: (projectId: string) => boolean): void {
    const resumed: ProjectActor[] = [];
    for (const project of this.store.allProjects()) {
      if (!owns(project.id)) continue;
      this.warnIfUnreachable(project.id);
      // A project with none gets no actor until it is used; its actor counts them.
      const tables = this.store.deliveryTables;
      if (!tables.hasAnyIn(project.id, WAITING_STATUSES) && !tables.hasAnyIn(operationalStoreId(project.id), WAITING_STATUSES)) continue;
      const actor = this.actorFor(project.id);
      actor.startFromDisk();
      resumed.push(actor);
    }
    if (resumed.length === 0) return;
    void Promise.all(resumed.map((actor) => actor.counted)).then(() => {
      if (this.stopping) return;
      let waiting = 0;
      for (const actor of resumed) waiting += actor.waitingWithOperational;
      this.logger.info({ waiting, held: this.heldDeliveries.count }, 'resumed waiting deliveries from LMDB (those due soon into memory, the rest on disk)');
    });
  }

  /**
   * A webhook stored while private networks were allowed, read by a node that forbids them: every
   * attempt would fail with `address not allowed` and the deliveries dead-letter, so say so at
   * start rather than only in each attempt. Only IP literals and `localhost` are judged here; a name
   * that resolves to a private address is refused when an attempt resolves it. The host alone is
   * logged: a URL may carry credentials.
   */
  private warnIfUnreachable(projectId: string): void {
    if (this.settings.allowPrivateNetworks) return;
    const webhook = this.store.getWebhook(projectId);
    if (!webhook) return;
    for (const field of ['callbackUrl', 'operationalUrl'] as const) {
      const text = webhook[field];
      if (!text || !URL.canParse(text)) continue;
      const url = new URL(text);
      if (!isBlockedLiteralHost(url)) continue;
      this.logger.warn(
        { projectId, field, host: url.host, state: webhook.state },
        `project ${projectId}: the stored ${field} points at ${url.host}, a loopback, private or link-local address, and HOOKLINE_ALLOW_PRIVATE_NETWORKS is off: every attempt to it fails (blocked_address) and its deliveries dead-letter. Point the webhook at a public host (PUT /v1/webhook), or set HOOKLINE_ALLOW_PRIVATE_NETWORKS=1`,
      );
    }
  }

  /**
   * Stops acting for the projects matching `owns` (cluster: a partition moves away): their actors
   * stop starting attempts at once (before this returns its promise), in-flight ones finish and
   * their changes are written, then the actors are dropped.
   */
  async releaseProjects(owns: (projectId: string) => boolean): Promise<void> {
    const leaving = [...this.actors.values()].filter((actor) => owns(actor.projectId));
    await Promise.all(leaving.map((actor) => actor.drain(this.settings.deliveryTimeoutMs + 1000)));
    for (const actor of leaving) {
      actor.dropFromMemory();
      this.actors.delete(actor.projectId);
    }
  }

  /** Ids of deliveries created before this are past retention (`HOOKLINE_RETENTION`): for the prune, snapshots, retry and redrive alike. */
  private retentionCutoffId(): string {
    return retentionCutoffId(this.clock.now(), this.settings.retentionMs);
  }

  /** Whether a delivery would be pruned now: terminal and past retention (a changelog snapshot leaves it out). */
  pastRetention(): (record: Pick<DeliveryRecord, 'id' | 'status'>) => boolean {
    const cutoffId = this.retentionCutoffId();
    return (record) => isPastRetention(record, cutoffId);
  }

  async pruneExpired(): Promise<number> {
    const cutoffId = this.retentionCutoffId();
    let pruned = 0;
    for (const project of this.store.allProjects()) {
      if (!this.owns(project.id)) continue;
      const found = { project: this.store.terminalIdsBefore(project.id, cutoffId, PRUNE_BATCH), operational: this.store.terminalIdsBefore(operationalStoreId(project.id), cutoffId, PRUNE_BATCH) };
      if (found.project.length === 0 && found.operational.length === 0) continue;
      // Through the project's actor, in the turn they were found: it keeps retry and redrive off them.
      pruned += await this.actorFor(project.id).recovery.prune(cutoffId, found);
    }
    if (pruned > 0) this.logger.info({ pruned }, 'pruned terminal deliveries past retention');
    return pruned;
  }

  /**
   * Graceful stop: no new events, in-flight attempts finish (or are left `delivering`, which the
   * next start redoes), LMDB is flushed and closed.
   */
  stop(drainDeadlineMs: number = this.settings.deliveryTimeoutMs + 1000): Promise<void> {
    this.stopping ??= (async () => {
      for (const transport of this.transports) await transport.stop();
      if (this.pruneTimer) clearInterval(this.pruneTimer);
      await Promise.all([...this.actors.values()].map((actor) => actor.drain(drainDeadlineMs)));
      this.scheduler.stop();
      await this.sender.close?.();
      await this.store.close();
      await this.tracing?.shutdown();
    })();
    return this.stopping;
  }
}
