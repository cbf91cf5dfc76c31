/**
 * `hookline/sdk`: what a receiver or a producer needs, with no dependency beyond the platform.
 * Runs on Node (node:crypto fast path) and on any runtime with WebCrypto and fetch.
 */
export type { VerifierOptions, VerifyWebhookInput, WebhookVerifier } from '../signing/verify.js';
export { DEFAULT_TOLERANCE_SECONDS, createWebhookVerifier, verifyWebhookSignature } from '../signing/verify.js';
export type { SignWebhookInput } from '../signing/sign.js';
export { signWebhook } from '../signing/sign.js';
export { generateSecret } from '../signing/secret.js';
