/**
 * Portal links: a project's API key makes a link that opens the dashboard for that project, without
 * the key, until it expires or the project revokes its links. The link carries one secret, a random
 * token; the server keeps only its SHA-256 hash (like an API key's) with the link's project, expiry
 * and whether it may write. A token is valid because its hash is stored, not because of what it
 * says: nothing in it can be edited to reach another project or a later expiry, and a revocation
 * takes effect on the next request. The store is LMDB on a single node and the cluster's directory
 * bucket in cluster mode, so any node accepts a link made on another.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { hashApiKey } from '../actors/engine.js';
import { HooklineError } from '../errors.js';

/** Marks a bearer token as a portal link's, so an API key is never looked up among links. */
export const PORTAL_TOKEN_PREFIX = 'hlp_';

/** How long a link lasts: 1 hour unless asked, 7 days at most (a longer-lived credential is an API key). */
export const PORTAL_LINK_EXPIRY = { defaultMs: 3600_000, maxMs: 7 * 24 * 3600_000, max: '7d' } as const;

/** Where the dashboard's portal entry is; the token follows in the fragment. */
export const PORTAL_PATH = '/ui/portal';

export const portalLinkRecord = z.object({
  projectId: z.string().min(1),
  readOnly: z.boolean(),
  createdAt: z.number(),
  expiresAt: z.number(),
});
export type PortalLinkRecord = z.infer<typeof portalLinkRecord>;

/** Where links are kept, by the SHA-256 hex of their token (LMDB table, or the cluster directory). */
export interface PortalLinkStore {
  put(tokenHash: string, record: PortalLinkRecord): Promise<void>;
  get(tokenHash: string): Promise<PortalLinkRecord | null>;
  delete(tokenHash: string): Promise<void>;
  entries(): AsyncIterable<readonly [tokenHash: string, record: PortalLinkRecord]>;
}

/** What a request made with a portal token may do. */
export interface PortalAccess {
  projectId: string;
  readOnly: boolean;
  expiresAt: number;
}

export function isPortalToken(token: string): boolean {
  return token.startsWith(PORTAL_TOKEN_PREFIX);
}

/** The dashboard address of a link: the token in the fragment, which browsers never send to a server. */
export function portalUrl(origin: string, token: string): string {
  return `${origin}${PORTAL_PATH}#portal=${token}`;
}

export class PortalLinks {
  constructor(
    private readonly store: PortalLinkStore,
    private readonly now: () => number,
  ) {}

  /** Makes a link of `projectId`; the token is returned once and kept only as its hash. Expired links are dropped on the way. */
  async create(projectId: string, { expiresInMs, readOnly }: { expiresInMs: number; readOnly: boolean }): Promise<{ token: string; expiresAt: number }> {
    const now = this.now();
    await this.deleteWhere((record) => record.expiresAt <= now);
    const token = `${PORTAL_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = now + expiresInMs;
    await this.store.put(hashApiKey(token), { projectId, readOnly, createdAt: now, expiresAt });
    return { token, expiresAt };
  }

  /** The access a token gives now; null when it is unknown, revoked or expired. */
  async access(token: string): Promise<PortalAccess | null> {
    const tokenHash = hashApiKey(token);
    const record = await this.store.get(tokenHash);
    if (!record) return null;
    if (record.expiresAt <= this.now()) {
      await this.store.delete(tokenHash).catch(() => undefined);
      return null;
    }
    return { projectId: record.projectId, readOnly: record.readOnly, expiresAt: record.expiresAt };
  }

  /** Revokes every link of the project; resolves with how many were live. */
  async revokeAll(projectId: string): Promise<number> {
    const now = this.now();
    let live = 0;
    await this.deleteWhere((record) => {
      if (record.projectId !== projectId) return false;
      if (record.expiresAt > now) live++;
      return true;
    });
    return live;
  }

  private async deleteWhere(matches: (record: PortalLinkRecord) => boolean): Promise<void> {
    const doomed: string[] = [];
    for await (const [tokenHash, record] of this.store.entries()) if (matches(record)) doomed.push(tokenHash);
    for (const tokenHash of doomed) await this.store.delete(tokenHash);
  }
}

const READING_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a portal session may not make this call, or null when it may: a read-only link makes no
 * change, and no link makes or revokes links (it could outlive its own expiry or its revocation).
 */
export function portalRefusal(access: PortalAccess, method: string, path: string): HooklineError | null {
  if (path === '/v1/portal-links') {
    return new HooklineError('HOOKLINE_ERR_FORBIDDEN', 'portal links are made and revoked with the project\'s API key, not with a portal link');
  }
  if (access.readOnly && !READING_METHODS.has(method.toUpperCase())) {
    return new HooklineError('HOOKLINE_ERR_FORBIDDEN', 'this portal link is read-only: it can look but not change anything');
  }
  return null;
}
