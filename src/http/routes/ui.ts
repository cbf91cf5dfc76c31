/**
 * The operators' dashboard, served by the node itself: static files built from web/ into dist/ui
 * (`npm run build`), the delivery machine's diagram as SVG, and a server-rendered delivery log for
 * browsers without JavaScript. The dashboard's data comes from the /v1 API with the project key
 * as a bearer token, so these routes hold no project data except the no-JavaScript log.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { machineGraph, renderSvg } from '../../diagram/index.js';
import { inputProblems, problemsLine } from '../../input-messages.js';
import { queryDeliveries } from '../../store/delivery-query.js';
import { presentDelivery } from '../present.js';
import { deliveryListQuery } from '../schemas.js';
import { PORTAL_PATH } from '../../portal/portal-links.js';
import type { HttpDeps } from '../server.js';
import { LOG_FORM_FIELDS, renderLogPage } from './ui-log-page.js';
import type { LogForm } from './ui-log-page.js';

/**
 * Where `npm run build` puts the dashboard: <package>/dist/ui. This file sits three folders below
 * the package root both as source (src/http/routes) and compiled (dist/http/routes).
 */
export const DEFAULT_UI_ROOT = fileURLToPath(new URL('../../../dist/ui/', import.meta.url));

export interface DashboardOptions {
  /** The built dashboard's folder. @default DEFAULT_UI_ROOT */
  root?: string;
}

/**
 * Same-origin everything, no inline script or style, and framing only by `frameAncestors` (none but
 * for the portal page, which HOOKLINE_PORTAL_FRAME_ANCESTORS opens to the origins it names). The SVG
 * diagram is inserted as markup (presentation attributes, no style attributes), which this allows.
 */
export function contentSecurityPolicy(frameAncestors: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'"}`,
  ].join('; ');
}

const DATETIME_LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/** A `datetime-local` value (no zone) read as UTC, as the no-JavaScript form's labels say. */
function utcFromLocalInput(value: string): string {
  if (!DATETIME_LOCAL.test(value)) return value;
  return value.length === 16 ? `${value}:00Z` : `${value}Z`;
}

function readLogForm(body: unknown): LogForm {
  const source = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const form = {} as LogForm;
  for (const name of LOG_FORM_FIELDS) form[name] = typeof source[name] === 'string' ? source[name].trim() : '';
  return form;
}

function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.status(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html);
}

export function registerDashboardRoutes(app: FastifyInstance, { engine, cluster }: HttpDeps, options: DashboardOptions = {}): void {
  const root = options.root ?? DEFAULT_UI_ROOT;
  let deliverySvg: string | null = null;
  const policy = contentSecurityPolicy([]);
  const portalAncestors = engine.settings.portalFrameAncestors;
  const portalPolicy = contentSecurityPolicy(portalAncestors);

  app.register(async (ui) => {
    ui.addHook('onSend', async (request, reply, payload) => {
      const portalPage = request.url.split('?')[0] === PORTAL_PATH;
      reply.header('content-security-policy', portalPage ? portalPolicy : policy);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      // X-Frame-Options has no list of origins: browsers that know frame-ancestors follow it instead.
      if (!portalPage || portalAncestors.length === 0) reply.header('x-frame-options', 'DENY');
      return payload;
    });
    // Only the no-JavaScript log form is url-encoded; the /v1 API stays JSON-only.
    ui.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    ui.get('/', async (_request, reply) => reply.redirect('/ui/', 302));
    ui.get('/ui', async (_request, reply) => reply.redirect('/ui/', 302));

    ui.get('/ui/diagrams/delivery.svg', async (_request, reply) => {
      deliverySvg ??= renderSvg(machineGraph('delivery'));
      return reply.type('image/svg+xml; charset=utf-8').header('cache-control', 'no-cache').send(deliverySvg);
    });

    ui.get('/ui/log', async (_request, reply) => sendHtml(reply, 200, renderLogPage({ form: readLogForm({}) })));

    ui.post('/ui/log', async (request, reply) => {
      const form = readLogForm(request.body);
      let projectId = form.apiKey ? engine.authenticate(form.apiKey) : null;
      if (!projectId && form.apiKey && cluster) projectId = await cluster.authenticate(form.apiKey);
      if (!projectId) return sendHtml(reply, 401, renderLogPage({ form: { ...form, apiKey: '' }, error: 'That API key was not accepted. Check it and try again.' }));
      const filters: Record<string, string> = {
        ...(form.status ? { status: form.status } : {}),
        ...(form.eventType ? { eventType: form.eventType } : {}),
        ...(form.eventId ? { eventId: form.eventId } : {}),
        ...(form.since ? { since: utcFromLocalInput(form.since) } : {}),
        ...(form.until ? { until: utcFromLocalInput(form.until) } : {}),
        ...(form.limit ? { limit: form.limit } : {}),
        ...(form.cursor ? { cursor: form.cursor } : {}),
      };
      const query = deliveryListQuery.safeParse(filters);
      if (!query.success) {
        const problems = problemsLine(inputProblems(query.error));
        return sendHtml(reply, 400, renderLogPage({ form, error: `Check the filters: ${problems}` }));
      }
      if (cluster && !cluster.ownsProject(projectId)) {
        // In a cluster the project's log is the owner's: ask it, as the /v1 route would.
        const answer = await cluster
          .forward(projectId, { method: 'GET', url: `/v1/logs/webhook-deliveries?${new URLSearchParams(filters).toString()}`, headers: { authorization: `Bearer ${form.apiKey}` }, body: null })
          .catch(() => null);
        if (answer?.statusCode !== 200) return sendHtml(reply, 503, renderLogPage({ form, error: 'The node holding this project\'s log did not answer (the cluster may be moving it). Try again in a moment.' }));
        const page = JSON.parse(answer.body) as { data: ReturnType<typeof presentDelivery>[]; nextCursor: string | null };
        return sendHtml(reply, 200, renderLogPage({ form, rows: page.data, nextCursor: page.nextCursor }));
      }
      const page = queryDeliveries(engine.store, projectId, query.data, engine.unstoredSteps(projectId));
      return sendHtml(reply, 200, renderLogPage({ form, rows: page.data.map(presentDelivery), nextCursor: page.nextCursor }));
    });

    if (existsSync(join(root, 'index.html'))) {
      await ui.register(fastifyStatic, { root, prefix: '/ui/', index: 'index.html', cacheControl: false, setHeaders: (reply) => void reply.header('cache-control', 'no-cache') });
      // A portal link's page: the dashboard itself, which reads the link's token from the fragment.
      ui.get(PORTAL_PATH, async (_request, reply) => reply.header('cache-control', 'no-store').sendFile('index.html'));
    } else {
      ui.get('/ui/*', async (_request, reply) =>
        reply.status(503).header('retry-after', '60').type('text/plain; charset=utf-8').send(`The dashboard is not built: run \`npm run build\` (it writes ${root}).\n`),
      );
    }
  });
}
