import fc from 'fast-check';
import { open } from 'lmdb';
import { afterAll, describe, expect, it } from 'vitest';
import { PortalLinks, portalRefusal } from '../../src/portal/portal-links.js';
import { PortalLinkTable } from '../../src/store/portal-link-table.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Portal links against a real LMDB table and a clock the test moves: whatever the sequence of
 * links made, time passed and revocations, a token opens its project exactly while it is
 * neither expired nor revoked, with the access it was made with.
 */

const dir = makeTempDir('hookline-portal-');
const root = open({ path: dir.path, noSubdir: false, maxDbs: 4 });
afterAll(async () => {
  await root.close();
  dir.remove();
});

type Step =
  | { kind: 'create'; project: string; expiresInMs: number; readOnly: boolean }
  | { kind: 'advance'; ms: number }
  | { kind: 'revoke'; project: string };

const project = fc.constantFrom('prj_a', 'prj_b');
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), project, expiresInMs: fc.integer({ min: 1000, max: 10_000 }), readOnly: fc.boolean() }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 6000 }) }),
  fc.record({ kind: fc.constant('revoke' as const), project }),
);

describe('PortalLinks', () => {
  it('a token opens its project only until it expires or its project revokes its links', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps) => {
        let now = Date.UTC(2026, 10, 28);
        const links = new PortalLinks(new PortalLinkTable(root), () => now);
        // One table for every run: the last run's links go first.
        await links.revokeAll('prj_a');
        await links.revokeAll('prj_b');
        const made: { token: string; project: string; readOnly: boolean; expiresAt: number; revoked: boolean }[] = [];
        for (const next of steps) {
          if (next.kind === 'create') {
            const { token, expiresAt } = await links.create(next.project, next);
            expect(expiresAt).toBe(now + next.expiresInMs);
            made.push({ token, project: next.project, readOnly: next.readOnly, expiresAt, revoked: false });
          } else if (next.kind === 'advance') {
            now += next.ms;
          } else {
            const live = made.filter((link) => link.project === next.project && !link.revoked && link.expiresAt > now).length;
            expect(await links.revokeAll(next.project)).toBe(live);
            for (const link of made) if (link.project === next.project) link.revoked = true;
          }
          for (const link of made) {
            const expected = !link.revoked && link.expiresAt > now ? { projectId: link.project, readOnly: link.readOnly, expiresAt: link.expiresAt } : null;
            expect(await links.access(link.token)).toEqual(expected);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a portal session is refused exactly writes when read-only, and every call about portal links', () => {
    fc.assert(
      fc.property(fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'DELETE', 'PATCH', 'get', 'post'), fc.constantFrom('/v1/webhook', '/v1/events', '/v1/portal-links', '/v1/portal-session'), fc.boolean(), (method, path, readOnly) => {
        const refusal = portalRefusal({ projectId: 'prj_a', readOnly, expiresAt: 0 }, method, path);
        const aboutLinks = path === '/v1/portal-links';
        const writes = !['GET', 'HEAD', 'OPTIONS'].includes(method.toUpperCase());
        expect(refusal?.code ?? null).toBe(aboutLinks || (readOnly && writes) ? 'HOOKLINE_ERR_FORBIDDEN' : null);
      }),
    );
  });
});
