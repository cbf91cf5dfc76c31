import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the longest test files took in a fresh clone's CI run (Node 20, two files at a
 * time, 2026-11-28). A fresh clone has no Vitest results cache, so Vitest orders files by size, and
 * the longest ones (a nemesis run, child nodes started again and again) ended up last: one of them
 * started late held a suite for two minutes after every other file had ended. Started first, they
 * run beside the many short files instead. Approximate and unordered among equals: a file missing
 * here (new, or under 10 s) runs after these, in Vitest's own order.
 */
const MEASURED_SECONDS: Record<string, number> = {
  'test/integration/nemesis.test.ts': 121,
  'test/integration/startup.test.ts': 91,
  'test/integration/package-consumers.test.ts': 88,
  'test/integration/cluster.test.ts': 77,
  'test/integration/nats-cluster-mode.test.ts': 62,
  'test/integration/nats-cluster-failover.test.ts': 59,
  'test/integration/nats-cluster-auth.test.ts': 56,
  'test/integration/nats-project-limit.test.ts': 47,
  'test/integration/crash.test.ts': 41,
  'test/integration/cli-bin.test.ts': 35,
  'test/integration/cluster-nats-parking.test.ts': 34,
  'test/integration/cluster-takeover-backlog.test.ts': 29,
  'test/integration/cluster-snapshot.test.ts': 29,
  'test/integration/cluster-stale-reads.test.ts': 15,
  'test/integration/cluster-start-election.test.ts': 26,
  'test/integration/fuzz-replay.test.ts': 24,
  // Estimated, not yet measured in CI: two child nodes each, or a wait on a failing takeover.
  'test/integration/cluster-takeover-failing.test.ts': 40,
  'test/integration/tracing-cluster.test.ts': 20,
  'test/integration/cluster-nats-outcomes.test.ts': 20,
  'test/integration/cluster-portal-links.test.ts': 15,
  'test/integration/cli-fuzz.test.ts': 25,
  'test/integration/fuzz-planted-bugs.test.ts': 22,
  'test/integration/retention-prune-race.test.ts': 19,
  'test/e2e/dashboard.test.ts': 19,
  'test/integration/nats-parking.test.ts': 18,
  'test/integration/hardening-disk.test.ts': 17,
  'test/integration/cluster-changelog.test.ts': 15,
  'test/integration/hardening-fuzz.test.ts': 14,
  'test/integration/cluster-lease-keeper.test.ts': 12,
  'test/integration/cluster-lease-renewal.test.ts': 12,
  'test/integration/cli-publish-election.test.ts': 11,
  'test/e2e/dashboard-layout.test.ts': 11,
  'test/integration/nats-auth-recovery.test.ts': 10,
};

/** Vitest's order, with the files known to take longest moved to the front, longest first. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const inVitestOrder = await super.sort(files);
    const seconds = (file: TestSpecification) => MEASURED_SECONDS[relativeTo(file.project.config.root, file.moduleId)] ?? 0;
    // Array.prototype.sort is stable: files with no figure keep Vitest's order.
    return inVitestOrder.sort((a, b) => seconds(b) - seconds(a));
  }
}

function relativeTo(root: string, path: string): string {
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}
