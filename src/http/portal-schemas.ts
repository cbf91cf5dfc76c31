import { z } from 'zod';
import { parseDuration } from '../config/duration.js';
import { expected, strictShape } from '../input-messages.js';
import { PORTAL_LINK_EXPIRY } from '../portal/portal-links.js';
import { apiTime } from './response-schemas.js';

const EXPIRES_IN = `a duration from 1s to ${PORTAL_LINK_EXPIRY.max}: a whole number with a unit s, m, h or d, such as 30m, 1h or 7d`;

/** Milliseconds of an `expiresIn`, or null when it is no duration or out of bounds. */
function expiryMs(text: string): number | null {
  try {
    const ms = parseDuration(text);
    return ms >= 1000 && ms <= PORTAL_LINK_EXPIRY.maxMs ? ms : null;
  } catch {
    return null;
  }
}

const expiresIn = z
  .string({ error: expected(EXPIRES_IN) })
  .refine((text) => expiryMs(text) !== null, { error: (issue) => `must be ${EXPIRES_IN}; got ${JSON.stringify(issue.input)}` })
  .describe(`How long the link opens the dashboard, ${PORTAL_LINK_EXPIRY.max} at most. Default 1h.`);

export const createPortalLinkBody = strictShape(
  {
    expiresIn: expiresIn.optional(),
    readOnly: z.boolean({ error: expected('true or false') }).describe('A read-only link can look but not change anything: its writes answer 403. Default false.').optional(),
  },
  'a portal link',
)
  .optional()
  .transform((body) => ({ expiresInMs: body?.expiresIn === undefined ? PORTAL_LINK_EXPIRY.defaultMs : expiryMs(body.expiresIn)!, readOnly: body?.readOnly ?? false }));

export const portalLinkCreatedResponse = z.strictObject({
  url: z.string().describe('Opens the dashboard for the project without its API key. The token is in the fragment (`#portal=…`), which the browser never sends to a server; it is shown once, and Hookline stores only its hash.'),
  expiresAt: apiTime.describe('When the link and the sessions it opened end.'),
});

export const portalLinksRevokedResponse = z.strictObject({
  revoked: z.number().int().describe('How many links of the project were still live; every one is refused from now on.'),
});

export const portalSessionResponse = z.strictObject({
  projectId: z.string(),
  readOnly: z.boolean().describe('True for a read-only portal link: writes answer 403.'),
  expiresAt: apiTime.nullable().describe('When the session ends; `null` for an API key, which does not expire.'),
});

export type PortalLinkCreatedResponse = z.output<typeof portalLinkCreatedResponse>;
export type PortalLinksRevokedResponse = z.output<typeof portalLinksRevokedResponse>;
export type PortalSessionResponse = z.output<typeof portalSessionResponse>;
