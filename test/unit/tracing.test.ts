import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withoutCredentials } from '../../src/tracing/otel-tracing.js';
import { formatTraceparent, parseTraceparent } from '../../src/tracing/traceparent.js';
import { tracingSettingsFrom } from '../../src/tracing/tracing-settings.js';

const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`));

describe('traceparent', () => {
  it('reads back what it writes, for every valid trace id, span id and flags', () => {
    fc.assert(
      fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 255 }), (traceId, spanId, traceFlags) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
        expect(parseTraceparent(formatTraceparent({ traceId, spanId, traceFlags }))).toEqual({ traceId, spanId, traceFlags });
      }),
      { seed: 38, numRuns: 300 },
    );
  });

  it.each([
    ['all-zero trace id', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`],
    ['all-zero span id', `00-${'1'.repeat(32)}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${'1'.repeat(32)}-${'1'.repeat(16)}-01`],
    ['upper-case hex', `00-${'A'.repeat(32)}-${'1'.repeat(16)}-01`],
    ['version 00 with a fifth field', `00-${'1'.repeat(32)}-${'1'.repeat(16)}-01-extra`],
    ['a short trace id', `00-${'1'.repeat(31)}-${'1'.repeat(16)}-01`],
    ['nothing', ''],
  ])('ignores %s', (_name, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });

  it('takes a later version with more fields (the specification asks so)', () => {
    expect(parseTraceparent(`01-${'1'.repeat(32)}-${'2'.repeat(16)}-01-more`)).toEqual({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 });
  });
});

describe('tracing settings', () => {
  it('is off without an endpoint, or with OTEL_SDK_DISABLED=true', () => {
    expect(tracingSettingsFrom({})).toBeNull();
    expect(tracingSettingsFrom({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
  });

  it('sends to the traces path of the general endpoint, or to the traces endpoint as given', () => {
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toEqual({ tracesUrl: 'http://c:4318/v1/traces', serviceName: 'hookline', sampler: 'parentbased_always_on', samplerRatio: 1 });
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t/x' })?.tracesUrl).toBe('https://t/x');
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'hooks-eu', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toMatchObject({ serviceName: 'hooks-eu', sampler: 'parentbased_traceidratio', samplerRatio: 0.25 });
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG'],
  ])('refuses %o naming %s', (environment, variable) => {
    expect(() => tracingSettingsFrom(environment)).toThrow(expect.objectContaining({ code: 'HOOKLINE_ERR_CONFIG', details: [expect.objectContaining({ path: variable })] }));
  });

  it('records a URL without its credentials', () => {
    expect(withoutCredentials('https://user:secret@example.com/hooks?x=1')).toBe('https://example.com/hooks?x=1');
    expect(withoutCredentials('https://example.com/hooks')).toBe('https://example.com/hooks');
  });
});

describe('tracing off loads nothing of OpenTelemetry', () => {
  const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
  const sources = readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => ({ file: path.relative(SRC, path.join(entry.parentPath, entry.name)), text: readFileSync(path.join(entry.parentPath, entry.name), 'utf8') }));

  it('imports @opentelemetry/* (values) only in tracing/otel-tracing.ts, which is only ever imported dynamically', () => {
    const importing = sources.filter(({ text }) => /^import\s+(?!type\s)[^;]*from\s+'@opentelemetry\//m.test(text)).map(({ file }) => file);
    expect(importing).toEqual(['tracing/otel-tracing.ts']);
    const staticImporters = sources.filter(({ text }) => /^import\s+(?!type\s)[^;]*from\s+'[^']*otel-tracing\.js'/m.test(text)).map(({ file }) => file);
    expect(staticImporters).toEqual([]);
    expect(sources.filter(({ text }) => text.includes("import('./tracing/otel-tracing.js')")).map(({ file }) => file)).toEqual(['app.ts']);
  });
});
