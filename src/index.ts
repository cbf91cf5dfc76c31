/** `hookline`: the server entry. Start a node, or build one from its parts. */
export type { Hookline, StartOptions } from './app.js';
export { createLogger, startHookline } from './app.js';
export type { EngineOptions } from './actors/engine.js';
export { Engine } from './actors/engine.js';
export type { Settings } from './config/settings.js';
export { defaultSettings, settingsFromEnvironment } from './config/settings.js';
export type { HooklineErrorCode } from './errors.js';
export { ERROR_CODES, HooklineError, isHooklineError } from './errors.js';
export type { InboundTransport, EventSink, BatchEventSink } from './transport/types.js';
export { EmbeddedTransport } from './transport/embedded.js';
