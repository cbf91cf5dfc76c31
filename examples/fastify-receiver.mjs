// A webhook receiver on Fastify that keeps the raw body and verifies Hookline's signature.
// Run: WEBHOOK_SECRET=whsec_... node examples/fastify-receiver.mjs   (listens on 127.0.0.1:9000)
import Fastify from 'fastify';
import { verifyWebhookSignature } from 'hookline/sdk';

const secret = process.env.WEBHOOK_SECRET;
const app = Fastify();

// Keep the body as the exact bytes received: the signature covers them, not re-serialised JSON.
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

app.post('/webhooks', async (request, reply) => {
  const valid = await verifyWebhookSignature({
    id: request.headers['webhook-id'],
    timestamp: request.headers['webhook-timestamp'],
    signature: request.headers['webhook-signature'],
    body: request.body,
    secret,
  });
  if (!valid) return reply.code(400).send(); // 400, no body
  const event = JSON.parse(request.body.toString('utf8'));
  request.log.info({ type: event.type, eventId: event.id }, 'webhook received');
  return reply.code(204).send();
});

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 9000) });
