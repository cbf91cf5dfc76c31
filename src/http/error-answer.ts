import type { FastifyRequest } from 'fastify';
import { HooklineError, isHooklineError, isLoggedWhenAnswered, loggedError, withRequestId } from '../errors.js';

/** Fastify's own error codes that are the client's fault, mapped to ours. */
const FASTIFY_ERRORS: Record<string, HooklineError['code']> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'HOOKLINE_ERR_PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'HOOKLINE_ERR_VALIDATION',
};

/** The 415's message: what to send, and what was sent instead. */
export function unsupportedMediaTypeMessage(contentType: string | undefined): string {
  const sent = contentType ? `got content-type: ${contentType.length > 80 ? `${contentType.slice(0, 77)}...` : contentType}` : 'the request had no content-type';
  return `send the body as JSON with content-type: application/json (${sent})`;
}

/**
 * What a request failed with, as a coded error; anything unexpected is an internal error, its cause
 * kept. `request`, when given, lets a 415 name the content type that was sent.
 */
export function toHooklineError(error: unknown, request?: FastifyRequest): HooklineError {
  if (isHooklineError(error)) return error;
  const fastifyCode = (error as { code?: string }).code;
  if (fastifyCode === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new HooklineError('HOOKLINE_ERR_UNSUPPORTED_MEDIA_TYPE', unsupportedMediaTypeMessage(request?.headers['content-type']), { cause: error });
  const mapped = fastifyCode ? FASTIFY_ERRORS[fastifyCode] : undefined;
  if (mapped) return new HooklineError(mapped, (error as Error).message, { cause: error });
  if (error instanceof SyntaxError || (error as { statusCode?: number }).statusCode === 400) return new HooklineError('HOOKLINE_ERR_BAD_JSON', 'the body is not valid JSON', { cause: error });
  return new HooklineError('HOOKLINE_ERR_INTERNAL', 'internal error', { cause: error });
}

/**
 * The error a request is answered with, once per failure: logged at error when it
 * `isLoggedWhenAnswered` (the request's logger carries its `reqId`), and, when a 5xx, naming that
 * request id (`withRequestId`). `what` is the log line's message, when the error's own says too little.
 */
export function answerError(error: HooklineError, request: FastifyRequest, what = error.message): HooklineError {
  if (isLoggedWhenAnswered(error)) request.log.error({ err: loggedError(error) }, what);
  return withRequestId(error, request.id);
}
