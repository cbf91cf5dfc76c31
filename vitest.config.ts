import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/slow-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Docker images and compose stacks: `npm run test:deploy` (test/deploy/vitest.config.ts).
    exclude: [...configDefaults.exclude, 'test/deploy/**'],
    globalSetup: ['test/global-setup.ts'],
    // Vitest's own default is one file less than the cores: a single file at a time on a 2-core
    // machine. The files mostly wait (child nodes, nats-server, retry timers, Chromium), each with its
    // own ports, data directory and NATS names, so one more file than the cores runs at once;
    // `--maxWorkers=N` overrides it (`.ci/run` passes its own, running two Node lines side by side).
    maxWorkers: availableParallelism() + 1,
    // The longest files first, so that none starts last and holds the run (test/slow-first-sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
