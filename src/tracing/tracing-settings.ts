import { HooklineError } from '../errors.js';

/**
 * Tracing's settings, from the standard OpenTelemetry variables (not HOOKLINE_*: collectors and
 * platforms set these). Tracing is off, and nothing of OpenTelemetry is loaded, unless an OTLP
 * endpoint is set and OTEL_SDK_DISABLED is not `true`.
 */
export interface TracingSettings {
  /** Where spans are POSTed (OTLP/HTTP JSON), e.g. http://collector:4318/v1/traces. */
  tracesUrl: string;
  /** `service.name` of every span. @default 'hookline' */
  serviceName: string;
  sampler: TracesSampler;
  /** The ratio of the `traceidratio` samplers, 0 to 1. @default 1 */
  samplerRatio: number;
}

export const TRACES_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

const fail = (variable: string, message: string): never => {
  throw new HooklineError('HOOKLINE_ERR_CONFIG', `${variable} ${message}`, { details: [{ path: variable, message }] });
};

export function tracingSettingsFrom(env: Readonly<Record<string, string | undefined>>): TracingSettings | null {
  const value = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  if (value('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const tracesUrl = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? signalUrl(value('OTEL_EXPORTER_OTLP_ENDPOINT'));
  if (tracesUrl === undefined) return null;
  for (const [variable, url] of [['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')], ['OTEL_EXPORTER_OTLP_ENDPOINT', value('OTEL_EXPORTER_OTLP_ENDPOINT')]] as const) {
    if (url !== undefined && !/^https?:\/\/[^/]/.test(url)) fail(variable, 'must be an http:// or https:// URL, e.g. http://127.0.0.1:4318');
  }
  const sampler = (value('OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on') as TracesSampler;
  if (!TRACES_SAMPLERS.includes(sampler)) fail('OTEL_TRACES_SAMPLER', `must be one of ${TRACES_SAMPLERS.join(', ')}`);
  const ratioText = value('OTEL_TRACES_SAMPLER_ARG');
  const samplerRatio = ratioText === undefined ? 1 : Number(ratioText);
  if (sampler.endsWith('traceidratio') && !(samplerRatio >= 0 && samplerRatio <= 1)) fail('OTEL_TRACES_SAMPLER_ARG', 'must be a number from 0 to 1 (the ratio of traces sampled)');
  return { tracesUrl, serviceName: value('OTEL_SERVICE_NAME') ?? 'hookline', sampler, samplerRatio };
}

/** The OTLP/HTTP rule: the general endpoint takes the signal's path, `/v1/traces`. */
function signalUrl(endpoint: string | undefined): string | undefined {
  return endpoint === undefined ? undefined : `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}
