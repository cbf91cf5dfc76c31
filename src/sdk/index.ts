/**
 * `hookline/sdk`: what a receiver or a producer needs, with no dependency beyond the platform.
 * Runs on Node (node:crypto fast path) and on any runtime with WebCrypto and fetch. Publishing over
 * NATS is `hookline/sdk/nats` (./nats.ts), apart so that these declarations name no NATS type: a
 * consumer that never publishes over NATS type-checks without @nats-io/* installed.
 */
export type { VerifierOptions, VerifyWebhookInput, WebhookHeaderValue, WebhookVerifier } from '../signing/verify.js';
export { DEFAULT_TOLERANCE_SECONDS, createWebhookVerifier, verifyWebhookSignature } from '../signing/verify.js';
export type { SignWebhookInput } from '../signing/sign.js';
export { signWebhook } from '../signing/sign.js';
export { generateSecret } from '../signing/secret.js';
export { HooklineClient } from './client.js';
export type { HooklineApiErrorInit } from './errors.js';
export { HooklineApiError, INVALID_RESPONSE_CODE, NETWORK_ERROR_CODE, isHooklineApiError } from './errors.js';
export type {
  AttemptLogEntry,
  ConfigureWebhookInput,
  CreatePortalLinkInput,
  DateInput,
  Delivery,
  DeliveryDetail,
  DeliveryListFilter,
  DeliveryPage,
  DeliveryPageQuery,
  DeliveryStats,
  DeliveryStatus,
  DeliveryMachineState,
  DeliveryOrdering,
  DeliveryTransition,
  EventListFilter,
  EndpointCircuit,
  EventMetadata,
  EventPage,
  EventPageQuery,
  EventType,
  HooklineClientOptions,
  LastAttempt,
  MetadataKey,
  PayloadFilter,
  PortalLink,
  PortalLinksRevoked,
  PortalSession,
  RedriveFilter,
  RedriveResult,
  RejectedEvent,
  RejectedEventListFilter,
  RejectedEventPage,
  RejectedEventPageQuery,
  ReplayResult,
  RequestOptions,
  RotatedSecret,
  RotateSecretInput,
  SendEventInput,
  SendEventResult,
  SendEventsItem,
  StoredEvent,
  WebhookConfig,
  WebhookConfigStatus,
  WebhookSecret,
  WebhookStatus,
} from './types.js';
export { DELIVERY_STATUSES, EVENT_TYPES, METADATA_KEYS } from './types.js';
export { ingestSubject, partitionOf } from './partition.js';
