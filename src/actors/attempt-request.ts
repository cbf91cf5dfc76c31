import { nodeHmacBackend } from '../signing/node-hmac.js';
import { deliveryHeaders } from '../signing/delivery-headers.js';
import { formatSignatureHeader, secretsToKeys } from '../signing/sign.js';
import type { WebhookRecord } from '../store/records.js';
import type { SendRequest } from '../transport/http-sender.js';
import { signingSecrets } from './webhook-settings.js';

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

  /**
   * The attempt's headers are signed when the sender asks for them, once a connection to the origin
   * is free, and not when the attempt starts: endpoints sharing a slow origin queue there, and a
   * timestamp taken at the start could be past the receiver's tolerance (300 s) on arrival. They are
   * signed with the webhook as it is then (`webhookNow`): an attempt that waited through a secret
   * rotation carries the new secret.
   */
  build(webhook: WebhookRecord, webhookNow: () => WebhookRecord, deliveryId: string, envelope: Uint8Array, now: () => number): SendRequest {
    return { url: webhook.callbackUrl, headers: () => this.signedHeaders(webhookNow(), deliveryId, envelope, now()), body: envelope };
  }

  private signedHeaders(webhook: WebhookRecord, deliveryId: string, envelope: Uint8Array, sentAt: number): Record<string, string> {
    const timestamp = String(Math.floor(sentAt / 1000));
    const signature = formatSignatureHeader(this.keysAt(webhook, sentAt).map((key) => nodeHmacBackend.sign(key, deliveryId, timestamp, envelope)));
    // The operator's headers may replace user-agent; the webhook-* ones are refused at PUT.
    return deliveryHeaders(webhook.headers, deliveryId, timestamp, signature);
  }

  private keysAt(webhook: WebhookRecord, now: number): Uint8Array[] {
    if (!this.signingKeys || now >= this.signingKeys.validUntil) {
      const { secrets, validUntil } = signingSecrets(webhook, now);
      this.signingKeys = { keys: secretsToKeys(secrets), validUntil };
    }
    return this.signingKeys.keys;
  }
}
