import type { FastifyInstance } from 'fastify';
import { HooklineError } from '../../errors.js';
import { isBlockedLiteralHost } from '../../transport/address-guard.js';
import { isoTime } from '../../iso-time.js';
import { presentWebhook } from '../present.js';
import type { RotatedSecretResponse, WebhookSecretResponse } from '../response-schemas.js';
import { configureWebhookBodyFor, parseInput, rotateSecretBody } from '../schemas.js';
import type { HttpDeps } from '../server.js';

export function registerWebhookRoutes(app: FastifyInstance, { engine }: HttpDeps): void {
  // `maxConcurrency` may not ask for more than this node gives any endpoint.
  const configureWebhookBody = configureWebhookBodyFor(engine.settings.endpointConcurrency);
  app.put('/webhook', async (request) => {
    const input = parseInput(configureWebhookBody, request.body, 'body');
    for (const field of ['callbackUrl', 'operationalUrl'] as const) {
      const url = input[field];
      if (url && !engine.settings.allowPrivateNetworks && isBlockedLiteralHost(new URL(url))) {
        throw new HooklineError('HOOKLINE_ERR_VALIDATION', `${field} points at a loopback, private or link-local address; use a public host, or set HOOKLINE_ALLOW_PRIVATE_NETWORKS=1 for local development`, {
          details: [{ path: `body.${field}`, message: 'address not allowed' }],
        });
      }
    }
    const actor = engine.actorFor(request.projectId);
    return presentWebhook(await actor.configure(input), actor.circuit());
  });

  app.get('/webhook', async (request) => {
    const actor = engine.actorFor(request.projectId);
    return presentWebhook(actor.requireWebhook(), actor.circuit());
  });

  app.get('/webhook/secret', async (request): Promise<WebhookSecretResponse> => {
    const webhook = engine.actorFor(request.projectId).requireWebhook();
    return { secret: webhook.secrets[0]!.secret, ...(webhook.operationalUrl && webhook.operationalSecret ? { operationalSecret: webhook.operationalSecret } : {}) };
  });

  app.post('/webhook/secret/rotate', async (request): Promise<RotatedSecretResponse> => {
    const { graceSeconds } = parseInput(rotateSecretBody, request.body, 'body');
    const rotated = await engine.actorFor(request.projectId).rotateSecret(graceSeconds);
    return { secret: rotated.secret, previousSecretExpiresAt: isoTime(rotated.previousSecretExpiresAt) };
  });
}
