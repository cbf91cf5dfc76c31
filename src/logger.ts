/**
 * What every layer logs through (pino in production, a stub in tests). Its own module so that
 * transports, the store and the cluster take it without importing the actors.
 */
export interface Logger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}
