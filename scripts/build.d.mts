// Types of scripts/build.mjs, for the test helpers that build dist/ before running it.

/** True when dist/ was never built by scripts/build.mjs, or a source changed since that build started. */
export function buildIsStale(): boolean;

export interface BuildOptions {
  /** Accept tsc's status 2 (type errors reported, every output still written) as a warning. @default false */
  allowTypeErrors?: boolean;
}

/** Builds dist/ (tsc, dashboard, CommonJS SDK), then packages/sdk/dist, and stamps dist/; throws when a step fails. */
export function build(options?: BuildOptions): { warnings: string[] };

/** Builds only when `buildIsStale()`. */
export function ensureBuilt(options?: BuildOptions): { built: boolean; warnings: string[] };
