import { defineConfig } from 'vitest/config';

// `npm run test:deploy`: the container image, the compose stacks and the systemd unit, with a real
// Docker (README, "Deployment"). Apart from `npm test` (vitest.config.ts excludes test/deploy):
// building images and starting a six-container cluster takes minutes. The files run one at a time,
// since they share the machine's Docker and its two cores.
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/deploy/**/*.test.ts'],
    globalSetup: ['test/deploy/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 900_000,
  },
});
