/**
 * `hookline/sdk`: what a receiver or a producer needs, with no dependency beyond the platform.
 * Runs on Node (node:crypto fast path) and on any runtime with WebCrypto and fetch.
 */
export type { VerifierOptions, VerifyWebhookInput, WebhookVerifier } from '../signing/verify.js';
export { DEFAULT_TOLERANCE_SECONDS, createWebhookVerifier, verifyWebhookSignature } from '../signing/verify.js';
export type { SignWebhookInput } from '../signing/sign.js';
export { signWebhook } from '../signing/sign.js';
export { generateSecret } from '../signing/secret.js';
export { HooklineClient } from './client.js';
export type { HooklineApiErrorInit } from './errors.js';
export { HooklineApiError, INVALID_RESPONSE_CODE, isHooklineApiError } from './errors.js';
export type {
  AttemptLogEntry,
  ConfigureWebhookInput,
  DateInput,
  Delivery,
  DeliveryDetail,
  DeliveryListFilter,
  DeliveryPage,
  DeliveryPageQuery,
  DeliveryStatus,
  DeliveryMachineState,
  DeliveryTransition,
  EventMetadata,
  EventType,
  HooklineClientOptions,
  LastAttempt,
  MetadataKey,
  RedriveFilter,
  RedriveResult,
  ReplayResult,
  RequestOptions,
  RotatedSecret,
  RotateSecretInput,
  SendEventInput,
  SendEventResult,
  WebhookConfig,
  WebhookConfigStatus,
  WebhookSecret,
  WebhookStatus,
} from './types.js';
export { DELIVERY_STATUSES, EVENT_TYPES, METADATA_KEYS } from './types.js';
export type { PublishEventOptions, PublishEventResult } from './nats.js';
export { publishEvent } from './nats.js';
export { ingestSubject, partitionOf } from './partition.js';
