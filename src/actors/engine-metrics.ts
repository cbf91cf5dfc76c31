import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of one engine, in a registry of its own (several engines can share a process in tests). */
export class EngineMetrics {
  readonly registry = new Registry();
  readonly eventsIngested = new Counter({ name: 'hookline_events_ingested_total', help: 'Events accepted, by whether they matched the webhook', labelNames: ['matched'] as const, registers: [this.registry] });
  readonly eventsRejected = new Counter({ name: 'hookline_events_rejected_total', help: 'Inbound messages refused and recorded in the rejected-events log, by reason', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly attempts = new Counter({ name: 'hookline_delivery_attempts_total', help: 'Delivery attempts by outcome (success, failure error class)', labelNames: ['outcome'] as const, registers: [this.registry] });
  readonly deliveriesFinished = new Counter({ name: 'hookline_deliveries_total', help: 'Deliveries that reached succeeded or dead_lettered', labelNames: ['status'] as const, registers: [this.registry] });
  // Apart from the two above, as the delivery log keeps operational deliveries apart: summed in, an
  // operational URL that fails doubled the failed attempts and dead letters the log and gauge show.
  readonly operationalAttempts = new Counter({ name: 'hookline_operational_delivery_attempts_total', help: 'Attempts of operational deliveries (to operationalUrl) by outcome (success, failure error class)', labelNames: ['outcome'] as const, registers: [this.registry] });
  readonly operationalDeliveriesFinished = new Counter({ name: 'hookline_operational_deliveries_total', help: 'Operational deliveries (to operationalUrl) that reached succeeded or dead_lettered', labelNames: ['status'] as const, registers: [this.registry] });
  readonly circuitTransitions = new Counter({ name: 'hookline_endpoint_circuit_transitions_total', help: 'Endpoint circuit breakers that opened (to="open") or closed again (to="closed")', labelNames: ['to'] as const, registers: [this.registry] });
  readonly outcomePublishFailures = new Counter({ name: 'hookline_outcome_publish_failures_total', help: 'Outcomes (HOOKLINE_NATS_OUTCOMES) not published on NATS: no ack after their tries, or too many waiting for one', registers: [this.registry] });
  readonly attemptSeconds = new Histogram({
    name: 'hookline_delivery_attempt_duration_seconds',
    help: 'Time from sending an attempt to its outcome',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });

  /** Gauges read live values when scraped, so the hot path never updates them. */
  constructor(readings: { liveDeliveries: () => number; waitingDeliveries: () => number; readyQueueDepth: () => number; scheduledRetries: () => number; deadLettered: () => number; circuitsOpen: () => number }) {
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
    gauge('hookline_live_deliveries', 'Deliveries held in memory (waiting ones due soon or in flight; the rest wait on disk)', readings.liveDeliveries);
    gauge('hookline_waiting_deliveries', 'Deliveries not yet final (pending, delivering, retrying), in memory or on disk, of the projects this node serves', readings.waitingDeliveries);
    gauge('hookline_ready_queue_depth', 'Deliveries due now, waiting for a free slot or a paused endpoint', readings.readyQueueDepth);
    gauge('hookline_scheduled_retries', 'Entries in the retry scheduler heap', readings.scheduledRetries);
    gauge('hookline_dead_lettered_deliveries', 'Deliveries in the dead-letter queue', readings.deadLettered);
    gauge('hookline_endpoint_circuits_open', 'Endpoints whose circuit breaker is open or probing', readings.circuitsOpen);
  }
}
