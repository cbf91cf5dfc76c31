import type { FastifyInstance } from 'fastify';
import { HooklineError } from '../../errors.js';
import { isBlockedLiteralHost } from '../../transport/address-guard.js';
import { isoTime } from '../../iso-time.js';
import { presentWebhook } from '../present.js';
import { configureWebhookBody, parseInput, rotateSecretBody } from '../schemas.js';
import type { HttpDeps } from '../server.js';

export function registerWebhookRoutes(app: FastifyInstance, { engine }: HttpDeps): void {
  app.put('/webhook', async (request) => {
    const input = parseInput(configureWebhookBody, request.body, 'body');
    if (!engine.settings.allowPrivateNetworks && isBlockedLiteralHost(new URL(input.callbackUrl))) {
      throw new HooklineError('HOOKLINE_ERR_VALIDATION', 'callbackUrl points at a loopback, private or link-local address; use a public host, or set HOOKLINE_ALLOW_PRIVATE_NETWORKS=1 for local development', {
        details: [{ path: 'body.callbackUrl', message: 'address not allowed' }],
      });
    }
    return presentWebhook(await engine.actorFor(request.projectId).configure(input));
  });

  app.get('/webhook', async (request) => presentWebhook(engine.actorFor(request.projectId).requireWebhook()));

  app.get('/webhook/secret', async (request) => ({ secret: engine.actorFor(request.projectId).requireWebhook().secrets[0]!.secret }));

  app.post('/webhook/secret/rotate', async (request) => {
    const { graceSeconds } = parseInput(rotateSecretBody, request.body, 'body');
    const rotated = await engine.actorFor(request.projectId).rotateSecret(graceSeconds);
    return { secret: rotated.secret, previousSecretExpiresAt: isoTime(rotated.previousSecretExpiresAt) };
  });
}
