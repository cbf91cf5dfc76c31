import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EngineMetrics } from '../../src/actors/engine-metrics.js';

describe('metrics', () => {
  const operationsPage = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const metrics = new EngineMetrics({ liveDeliveries: () => 0, waitingDeliveries: () => 0, readyQueueDepth: () => 0, scheduledRetries: () => 0, deadLettered: () => 0, circuitsOpen: () => 0 });

  it.each(metrics.registry.getMetricsAsArray().map((metric) => metric.name))('%s is in the table of metrics of docs/operations.md', (name) => {
    expect(operationsPage).toMatch(new RegExp(`^\\| \`${name}\` \\|`, 'm'));
  });
});
