import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Docker images and compose stacks: `npm run test:deploy` (test/deploy/vitest.config.ts).
    exclude: [...configDefaults.exclude, 'test/deploy/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
