import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, openApiJson } from '../../src/http/openapi.js';

describe('docs/openapi.json', () => {
  it('is the document the zod schemas make now (run `npm run openapi` after changing them)', () => {
    const checkedIn = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    expect(checkedIn === openApiJson(), 'docs/openapi.json is stale: run `npm run openapi` and commit it').toBe(true);
  });

  it('resolves every $ref inside itself and names each operation once', () => {
    const document = buildOpenApiDocument();
    const text = JSON.stringify(document);
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref.startsWith('#/')).toBe(true);
      const target = ref.slice(2).split('/').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], document);
      expect(target, ref).toBeTypeOf('object');
    }
    const operationIds = [...text.matchAll(/"operationId":"([^"]+)"/g)].map((match) => match[1]!);
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('says what a retry answers: pending for a dead letter, still retrying (due now) for a retrying one', () => {
    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
    const answer = document.paths['/v1/logs/webhook-deliveries/{id}/retry']!.post!.responses['202']!.description;
    expect(answer).toContain('`pending`');
    expect(answer).toContain('`retrying`');
  });
});
