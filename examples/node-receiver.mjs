// A webhook receiver on plain node:http that verifies Hookline's Standard Webhooks signature.
// Run: WEBHOOK_SECRET=whsec_... node examples/node-receiver.mjs   (listens on 127.0.0.1:9000)
import http from 'node:http';
import { verifyWebhookSignature } from 'hookline/sdk';

const secret = process.env.WEBHOOK_SECRET;
const port = Number(process.env.PORT ?? 9000);

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks); // the raw bytes: never JSON.parse + JSON.stringify before verifying
      const valid = await verifyWebhookSignature({
        id: req.headers['webhook-id'],
        timestamp: req.headers['webhook-timestamp'],
        signature: req.headers['webhook-signature'],
        body,
        secret,
      });
      if (!valid) {
        res.writeHead(400).end(); // 400, no body
        return;
      }
      const event = JSON.parse(body.toString('utf8'));
      console.log(`${req.headers['webhook-id']} ${event.type} ${event.id}`);
      res.writeHead(204).end();
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`receiver on http://127.0.0.1:${port}/`));
