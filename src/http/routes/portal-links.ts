import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isoTime } from '../../iso-time.js';
import { portalUrl } from '../../portal/portal-links.js';
import type { PortalLinks } from '../../portal/portal-links.js';
import { createPortalLinkBody } from '../portal-schemas.js';
import type { PortalLinkCreatedResponse, PortalLinksRevokedResponse, PortalSessionResponse } from '../portal-schemas.js';
import { parseInput } from '../schemas.js';

/** The origin the caller reached this node at: the link is made for the same address. */
function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** Portal links (made and revoked with the API key: the auth hook refuses a portal token here) and the session a caller holds. */
export function registerPortalLinkRoutes(app: FastifyInstance, portalLinks: PortalLinks): void {
  app.post('/portal-links', { config: { anyNode: true } }, async (request, reply) => {
    const input = parseInput(createPortalLinkBody, request.body, 'body');
    const { token, expiresAt } = await portalLinks.create(request.projectId, input);
    return reply.status(201).send({ url: portalUrl(requestOrigin(request), token), expiresAt: isoTime(expiresAt) } satisfies PortalLinkCreatedResponse);
  });

  app.delete('/portal-links', { config: { anyNode: true } }, async (request): Promise<PortalLinksRevokedResponse> => ({ revoked: await portalLinks.revokeAll(request.projectId) }));

  app.get('/portal-session', { config: { anyNode: true } }, async (request): Promise<PortalSessionResponse> => {
    const portal = request.portal;
    return { projectId: request.projectId, readOnly: portal?.readOnly ?? false, expiresAt: portal ? isoTime(portal.expiresAt) : null };
  });
}
