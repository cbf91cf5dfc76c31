import type { HmacBackend } from './backend.js';
import { loadDefaultBackend } from './backend.js';
import { encodeBase64 } from './bytes.js';
import { CANDIDATE_SEPARATOR, SIGNATURE_VERSION } from './content.js';
import { decodeSecret } from './secret.js';

interface SignWebhookFields {
  /** The `webhook-id` header value (Hookline's delivery id). */
  id: string;
  /** The `webhook-timestamp` header value, Unix seconds. */
  timestamp: number | string;
  /** The exact bytes that will be sent as the request body. */
  body: string | Uint8Array;
}

/** What `signWebhook` signs, and with what: the same option names `verifyWebhookSignature` takes. */
export type SignWebhookInput = SignWebhookFields &
  (
    | {
        /**
         * The endpoint's secret, `whsec_<base64>` (whitespace at its end ignored), or several during
         * rotation, newest first: one `v1,` candidate per secret.
         */
        secret: string | readonly string[];
        secrets?: never;
      }
    | {
        /** @deprecated Use `secret`, which takes one secret or several, as `verifyWebhookSignature` does. */
        secrets: string | readonly string[];
        secret?: never;
      }
  );

/** `v1,<base64>` candidates joined by a space: the `webhook-signature` header value. */
export function formatSignatureHeader(signatures: readonly Uint8Array[]): string {
  return signatures.map((signature) => `${SIGNATURE_VERSION},${encodeBase64(signature)}`).join(CANDIDATE_SEPARATOR);
}

/** Decodes `whsec_` secrets into HMAC keys, throwing on a malformed one (a signer must not guess). */
export function secretsToKeys(secrets: string | readonly string[]): Uint8Array[] {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (list.length === 0) throw new TypeError('at least one signing secret is required');
  return list.map((secret) => {
    const key = decodeSecret(secret);
    if (!key) throw new TypeError('a signing secret must be "whsec_" followed by base64');
    return key;
  });
}

/**
 * Signs a webhook the Standard Webhooks way and returns the `webhook-signature` header value.
 * @throws {TypeError} when no secret is given or one is not `whsec_` followed by base64
 */
export async function signWebhook(input: SignWebhookInput, backend?: HmacBackend): Promise<string> {
  const hmac = backend ?? (await loadDefaultBackend());
  const timestamp = String(input.timestamp);
  const secrets = input.secret ?? input.secrets;
  if (secrets === undefined) throw new TypeError('signWebhook: pass the endpoint\'s secret as `secret` (a "whsec_" string, or several newest first)');
  const signatures = await Promise.all(secretsToKeys(secrets).map((key) => hmac.sign(key, input.id, timestamp, input.body)));
  return formatSignatureHeader(signatures);
}
