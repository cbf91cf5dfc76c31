import { nodeHmacBackend } from '../signing/node-hmac.js';
import { formatSignatureHeader, secretsToKeys } from '../signing/sign.js';
import type { WebhookRecord } from '../store/records.js';
import type { SendRequest } from '../transport/http-sender.js';
import { signingSecrets } from './webhook-settings.js';

const USER_AGENT = 'Hookline/0.1 (+https://www.standardwebhooks.com)';

/**
 * The request of one attempt at an endpoint: the stored envelope, signed (Standard Webhooks) with
 * every secret the webhook still accepts, newest first. Secrets are decoded into keys once and
 * kept until the next one of them expires or the webhook changes (`forgetKeys`), since every
 * attempt of a project signs with the same ones.
 */
export class AttemptRequests {
  private signingKeys: { keys: Uint8Array[]; validUntil: number } | null = null;

  /** The webhook's secrets changed: keys are decoded again at the next attempt. */
  forgetKeys(): void {
    this.signingKeys = null;
  }

  build(webhook: WebhookRecord, deliveryId: string, envelope: Uint8Array, startedAt: number): SendRequest {
    const timestamp = String(Math.floor(startedAt / 1000));
    const signature = formatSignatureHeader(this.keysAt(webhook, startedAt).map((key) => nodeHmacBackend.sign(key, deliveryId, timestamp, envelope)));
    // The operator's headers may replace user-agent; the webhook-* ones are refused at PUT.
    const headers = { 'user-agent': USER_AGENT, ...webhook.headers, 'webhook-id': deliveryId, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
    return { url: webhook.callbackUrl, headers, body: envelope };
  }

  private keysAt(webhook: WebhookRecord, now: number): Uint8Array[] {
    if (!this.signingKeys || now >= this.signingKeys.validUntil) {
      const { secrets, validUntil } = signingSecrets(webhook, now);
      this.signingKeys = { keys: secretsToKeys(secrets), validUntil };
    }
    return this.signingKeys.keys;
  }
}
