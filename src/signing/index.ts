export type { HmacBackend } from './backend.js';
export { loadDefaultBackend } from './backend.js';
export { CANDIDATE_SEPARATOR, SIGNATURE_VERSION, signedContent } from './content.js';
export { SECRET_PREFIX, decodeSecret, decodeVerifierSecret, generateSecret } from './secret.js';
export type { SignWebhookInput } from './sign.js';
export { formatSignatureHeader, secretsToKeys, signWebhook } from './sign.js';
export type { VerifierOptions, VerifyWebhookInput, WebhookHeaderValue, WebhookVerifier } from './verify.js';
export { DEFAULT_TOLERANCE_SECONDS, createWebhookVerifier, verifyWebhookSignature } from './verify.js';
export { webCryptoHmacBackend } from './webcrypto-hmac.js';
