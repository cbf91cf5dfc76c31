import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/http/openapi.js';
import { HooklineClient } from '../../src/sdk/index.js';

/** The "The SDK client" section of docs/receivers.md, up to the next heading of its level. */
function sdkSection(): string {
  const page = readFileSync(new URL('../../docs/receivers.md', import.meta.url), 'utf8');
  const start = page.indexOf('\n## The SDK client\n');
  expect(start).toBeGreaterThan(0);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end === -1 ? undefined : end);
}

describe('HooklineClient and the OpenAPI document', () => {
  it('has a method per operation (same name as its operationId), or docs/receivers.md names the route as not covered', () => {
    const section = sdkSection();
    const methods = new Set(Object.getOwnPropertyNames(HooklineClient.prototype));
    const missing = OPERATIONS.filter((operation) => !methods.has(operation.operationId))
      .map((operation) => `${operation.method.toUpperCase()} ${operation.path}`)
      .filter((route) => !section.includes(`\`${route}\``));
    expect(missing, 'routes neither a client method nor named in docs/receivers.md "The SDK client"').toEqual([]);
  });
});
