/**
 * W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header):
 * `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. Anything else is ignored, as the
 * specification asks, and the span starts a trace of its own.
 */
export interface SpanContextFields {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

export function parseTraceparent(header: string | undefined): SpanContextFields | null {
  if (header === undefined) return null;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  // Version ff is forbidden; version 00 has exactly four fields (later versions may add more).
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) };
}

export function formatTraceparent({ traceId, spanId, traceFlags }: SpanContextFields): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The first value of a header that may repeat (HTTP) or be absent. */
export function firstHeader(value: string | readonly string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}
