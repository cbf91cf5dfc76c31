import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/http/openapi.js';
import { HooklineClient } from '../../src/sdk/index.js';

/** The README's "The SDK client" section, up to the next heading. */
function sdkSection(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('\n## The SDK client\n');
  expect(start).toBeGreaterThan(0);
  return readme.slice(start, readme.indexOf('\n## ', start + 1));
}

describe('HooklineClient and the OpenAPI document', () => {
  it('has a method per operation (same name as its operationId), or the README names the route as not covered', () => {
    const section = sdkSection();
    const methods = new Set(Object.getOwnPropertyNames(HooklineClient.prototype));
    const missing = OPERATIONS.filter((operation) => !methods.has(operation.operationId))
      .map((operation) => `${operation.method.toUpperCase()} ${operation.path}`)
      .filter((route) => !section.includes(`\`${route}\``));
    expect(missing, 'routes neither a client method nor named in README "The SDK client"').toEqual([]);
  });
});
