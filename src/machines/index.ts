import { deliveryImplementations, deliveryMachine } from './delivery.js';
import type { DeliveryCounters, DeliveryEvent, DeliveryEventType, DeliveryState, DeliveryStatus } from './delivery.js';
import { compileMachine } from './transition-table.js';
import type { CompiledMachine, StepResult, TransitionEdge, TransitionHop } from './transition-table.js';
import { webhookConfigImplementations, webhookConfigMachine } from './webhook-config.js';
import type { WebhookConfigContext, WebhookConfigEvent, WebhookConfigEventType, WebhookConfigState } from './webhook-config.js';

export type DeliveryTable = CompiledMachine<DeliveryState, DeliveryCounters, DeliveryEvent, DeliveryStatus>;
export type DeliveryStep = StepResult<DeliveryStatus, DeliveryCounters, DeliveryEventType, DeliveryState>;
export type DeliveryEdge = TransitionEdge<DeliveryState, DeliveryEventType>;
export type DeliveryHop = TransitionHop<DeliveryState, DeliveryEventType>;

export type WebhookConfigTable = CompiledMachine<WebhookConfigState, WebhookConfigContext, WebhookConfigEvent>;
export type WebhookConfigStep = StepResult<WebhookConfigState, WebhookConfigContext, WebhookConfigEventType>;
export type WebhookConfigEdge = TransitionEdge<WebhookConfigState, WebhookConfigEventType>;

export const deliveryTable: DeliveryTable = compileMachine<
  DeliveryState,
  DeliveryCounters,
  DeliveryEvent,
  DeliveryStatus
>(deliveryMachine, deliveryImplementations);

export const webhookConfigTable: WebhookConfigTable = compileMachine<
  WebhookConfigState,
  WebhookConfigContext,
  WebhookConfigEvent
>(webhookConfigMachine, webhookConfigImplementations);

export const deliveryEdges: readonly DeliveryEdge[] = deliveryTable.edges;
export const webhookConfigEdges: readonly WebhookConfigEdge[] = webhookConfigTable.edges;

export {
  DELIVERY_EVENT_TYPES,
  DELIVERY_STATES,
  DELIVERY_STATUSES,
  countAttempt,
  deliveryImplementations,
  deliveryMachine,
  hasAttemptsLeft,
  initialDeliveryCounters,
  isTerminalDelivery,
  startRound,
} from './delivery.js';
export type { DeliveryCounters, DeliveryEvent, DeliveryEventType, DeliveryInput, DeliveryState, DeliveryStatus } from './delivery.js';
export { compileMachine } from './transition-table.js';
export type { CompiledMachine, ContextUpdater, GuardFunction, MachineImplementations, StepResult, TransitionEdge, TransitionHop } from './transition-table.js';
export {
  WEBHOOK_CONFIG_CONTEXT,
  WEBHOOK_CONFIG_EVENT_TYPES,
  WEBHOOK_CONFIG_STATES,
  requestsActive,
  requestsPaused,
  webhookConfigImplementations,
  webhookConfigMachine,
} from './webhook-config.js';
export type { WebhookConfigContext, WebhookConfigEvent, WebhookConfigEventType, WebhookConfigState, WebhookRequestedStatus } from './webhook-config.js';
