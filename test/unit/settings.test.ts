import { describe, expect, it } from 'vitest';
import { settingsFromEnvironment, unknownSettingWarnings } from '../../src/config/settings.js';

function failure(environment: Record<string, string>): string {
  try {
    settingsFromEnvironment(environment);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the settings were accepted');
}

describe('settings in plain words', () => {
  it.each([
    ['HOOKLINE_PORT', 'abc', 'a whole number 0-65535'],
    ['HOOKLINE_PORT', '70000', 'a whole number 0-65535'],
    ['HOOKLINE_PORT', '80.5', 'a whole number 0-65535'],
    ['HOOKLINE_RETRY_SCHEDULE', '0,soon', 'a comma-separated list of durations (ms, s, m, h, d), such as 0,5s,5m,30m,2h'],
    ['HOOKLINE_RETRY_JITTER', 'yes', '1, 0, true or false'],
    ['HOOKLINE_DELIVERY_TIMEOUT', '15 seconds', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_DELIVERY_TIMEOUT', '0', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_DELIVERY_TIMEOUT', '99999d', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_ALLOW_PRIVATE_NETWORKS', 'on', '1, 0, true or false'],
    ['HOOKLINE_MAX_BODY', '1 meg', 'a size of at least 1 byte: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb'],
    ['HOOKLINE_MAX_BODY', '0', 'a size of at least 1 byte: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb'],
    ['HOOKLINE_MAX_BATCH_BODY', '4 megs', 'a size of at least 1 byte: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb'],
    ['HOOKLINE_MAX_BATCH_BODY', '0kb', 'a size of at least 1 byte: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb'],
    ['HOOKLINE_NATS_STREAM', 'a.b', '1 to 64 letters, digits, _ or -'],
    ['HOOKLINE_NATS_SUBJECT_PREFIX', 'hookline.>', 'dot-separated words of letters, digits, _ or - without wildcards, such as hookline.events'],
    ['HOOKLINE_CLUSTER', '2', '1, 0, true or false'],
    ['HOOKLINE_NODE_ID', 'node 1', '1 to 64 letters, digits, _ or -'],
    ['HOOKLINE_PARTITIONS', '0', 'a whole number 1-1024'],
    ['HOOKLINE_LEASE_TTL', '-5s', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_LEASE_TTL', '0s', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_CLUSTER_SUBJECT_PREFIX', 'a..b', 'dot-separated words of letters, digits, _ or - without wildcards, such as hookline.events'],
    ['HOOKLINE_CHANGELOG_SNAPSHOT_EVERY', '0', 'a whole number 1 or more'],
    ['HOOKLINE_NATS_DURABLE', 'x'.repeat(65), '1 to 64 letters, digits, _ or -'],
    ['HOOKLINE_RETENTION', '1y', 'a duration: a whole number with an optional unit ms, s, m, h or d, such as 250ms, 15s, 5m or 2h'],
    ['HOOKLINE_DISABLE_AFTER', 'never', 'a duration: a whole number with an optional unit ms, s, m, h or d, such as 250ms, 15s, 5m or 2h'],
    ['HOOKLINE_ENDPOINT_CONCURRENCY', '0', 'a whole number 1-10000'],
    ['HOOKLINE_CIRCUIT_FAILURES', 'ten', 'a whole number 0-1000000'],
    ['HOOKLINE_CIRCUIT_FAILURES', '-1', 'a whole number 0-1000000'],
    ['HOOKLINE_CIRCUIT_PROBE_INTERVAL', '5 seconds', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_CIRCUIT_PROBE_INTERVAL', '0', 'a duration from 1ms to 24d (Node\'s longest timer), such as 15s'],
    ['HOOKLINE_RATE_LIMIT', '-1', 'a whole number 0 or more'],
    ['HOOKLINE_MAX_WAITING_PER_PROJECT', 'lots', 'a whole number 1 or more'],
    ['HOOKLINE_DELIVERY_WINDOW', '0', 'a whole number 1 or more'],
    ['HOOKLINE_MAX_DATA_SIZE', '10 GB!', 'a size: a whole number of bytes with an optional unit kb, mb or gb, such as 256kb or 1gb'],
    ['HOOKLINE_LOG_LEVEL', 'loud', 'one of fatal, error, warn, info, debug, trace, silent'],
    ['HOOKLINE_PORTAL_FRAME_ANCESTORS', '*', 'origins separated by spaces or commas, each a scheme, a host (its first label may be *) and an optional port, such as https://app.example.com https://*.example.org'],
    ['HOOKLINE_PORTAL_FRAME_ANCESTORS', "https://a.example 'unsafe-inline'", 'origins separated by spaces or commas, each a scheme, a host (its first label may be *) and an optional port, such as https://app.example.com https://*.example.org'],
  ])('%s=%s: "must be %s, got …"', (name, value, expected) => {
    expect(failure({ [name]: value })).toBe(`${name} must be ${expected}, got ${JSON.stringify(value)}`);
  });

  it('names every bad setting at once, and says what a cluster needs', () => {
    expect(failure({ HOOKLINE_PORT: 'abc', HOOKLINE_RETRY_JITTER: 'yes' })).toBe('HOOKLINE_PORT must be a whole number 0-65535, got "abc"; HOOKLINE_RETRY_JITTER must be 1, 0, true or false, got "yes"');
    expect(failure({ HOOKLINE_CLUSTER: '1' })).toMatch(/^cluster mode \(--cluster or HOOKLINE_CLUSTER=1\) needs HOOKLINE_NATS_URL/);
    expect(failure({ HOOKLINE_NATS_OUTCOMES: '1' })).toMatch(/^HOOKLINE_NATS_OUTCOMES=1 needs HOOKLINE_NATS_URL/);
    expect(settingsFromEnvironment({ HOOKLINE_NATS_URL: 'nats://127.0.0.1:4222', HOOKLINE_NATS_OUTCOMES: '1' }).natsOutcomes).toBe(true);
    expect(settingsFromEnvironment({}).natsOutcomes).toBe(false);
    // Outcomes on <root>.outcomes.> must not fall under the events' or the cluster's subjects, nor these under theirs.
    const withOutcomes = { HOOKLINE_NATS_URL: 'nats://127.0.0.1:4222', HOOKLINE_NATS_OUTCOMES: '1' };
    expect(failure({ ...withOutcomes, HOOKLINE_NATS_SUBJECT_PREFIX: 'hookline' })).toMatch(/^HOOKLINE_NATS_SUBJECT_PREFIX=hookline shares subjects with the outcomes HOOKLINE_NATS_OUTCOMES=1 publishes on hookline\.outcomes\.>/);
    expect(failure({ ...withOutcomes, HOOKLINE_NATS_SUBJECT_PREFIX: 'acme.outcomes' })).toMatch(/^HOOKLINE_NATS_SUBJECT_PREFIX=acme\.outcomes shares/);
    expect(failure({ ...withOutcomes, HOOKLINE_CLUSTER_SUBJECT_PREFIX: 'hookline.outcomes.cluster' })).toMatch(/^HOOKLINE_CLUSTER_SUBJECT_PREFIX=hookline\.outcomes\.cluster shares/);
    expect(settingsFromEnvironment({ ...withOutcomes, HOOKLINE_NATS_SUBJECT_PREFIX: 'acme.prod.events' }).natsSubjectPrefix).toBe('acme.prod.events');
    expect(settingsFromEnvironment({ HOOKLINE_NATS_SUBJECT_PREFIX: 'hookline' }).natsSubjectPrefix).toBe('hookline');
  });

  it('still takes the values it took before', () => {
    const settings = settingsFromEnvironment({ HOOKLINE_PORT: ' 8081 ', HOOKLINE_RETRY_JITTER: 'FALSE', HOOKLINE_DELIVERY_TIMEOUT: '2s', HOOKLINE_MAX_BODY: '1mb', HOOKLINE_RETRY_SCHEDULE: '0, 5s', HOOKLINE_LOG_LEVEL: 'debug' });
    expect(settings).toMatchObject({ port: 8081, retryJitter: false, deliveryTimeoutMs: 2000, maxBodyBytes: 1024 * 1024, retrySchedule: [0, 5000], logLevel: 'debug' });
    expect(settingsFromEnvironment({})).toMatchObject({ circuitFailures: 10, circuitProbeIntervalMs: 5000 });
    expect(settingsFromEnvironment({ HOOKLINE_CIRCUIT_FAILURES: '0', HOOKLINE_CIRCUIT_PROBE_INTERVAL: '250ms' })).toMatchObject({ circuitFailures: 0, circuitProbeIntervalMs: 250 });
  });

  it('reads the portal frame ancestors as a list, none by default', () => {
    expect(settingsFromEnvironment({}).portalFrameAncestors).toEqual([]);
    expect(settingsFromEnvironment({ HOOKLINE_PORTAL_FRAME_ANCESTORS: ' https://app.example.com, https://*.example.org:8443 http://localhost:3000 ' }).portalFrameAncestors).toEqual(['https://app.example.com', 'https://*.example.org:8443', 'http://localhost:3000']);
  });
});

describe('NATS authentication modes', () => {
  it('credentials in HOOKLINE_NATS_URL count as a mode: with another one the start stops, naming both and printing no secret', () => {
    const withToken = failure({ HOOKLINE_NATS_URL: 'nats://app:s3cret@127.0.0.1:4222', HOOKLINE_NATS_TOKEN: 'tok123' });
    expect(withToken).toBe('HOOKLINE_NATS_TOKEN cannot be combined with the credentials in HOOKLINE_NATS_URL: NATS authenticates a client one way; keep the one your server expects');
    expect(failure({ HOOKLINE_NATS_URL: 'nats://127.0.0.1:4222,nats://t0ken@127.0.0.1:4223', HOOKLINE_NATS_CREDS: '/x.creds' })).toMatch(/^HOOKLINE_NATS_CREDS cannot be combined with the credentials in HOOKLINE_NATS_URL/);
    expect(settingsFromEnvironment({ HOOKLINE_NATS_URL: 'nats://app:s3cret@127.0.0.1:4222' }).natsUrl).toBe('nats://app:s3cret@127.0.0.1:4222');
    expect(settingsFromEnvironment({ HOOKLINE_NATS_URL: 'nats://127.0.0.1:4222', HOOKLINE_NATS_TOKEN: 'tok123' }).natsToken).toBe('tok123');
  });
});

describe('unknown HOOKLINE_* variables', () => {
  it('warns about each with the closest known name', () => {
    expect(unknownSettingWarnings({ HOOKLINE_PROT: '9090', HOOKLINE_DATADIR: '/x', HOOKLINE_PORT: '1', PATH: '/bin' })).toEqual([
      'HOOKLINE_DATADIR is not a Hookline setting and is ignored; did you mean HOOKLINE_DATA_DIR?',
      'HOOKLINE_PROT is not a Hookline setting and is ignored; did you mean HOOKLINE_PORT?',
    ]);
  });

  it('gives no suggestion for a name near none, and no warning for variables other commands read', () => {
    expect(unknownSettingWarnings({ HOOKLINE_SOMETHING_ELSE: '1', HOOKLINE_URL: 'http://x', HOOKLINE_DEBUG: '1' })).toEqual([
      "HOOKLINE_SOMETHING_ELSE is not a Hookline setting and is ignored; see the README's Settings for the names",
    ]);
  });

  it('says what a retired setting became instead of calling it a typo', () => {
    expect(unknownSettingWarnings({ HOOKLINE_MAX_LIVE_DELIVERIES: '5000' })).toEqual([
      'HOOKLINE_MAX_LIVE_DELIVERIES is retired and ignored: waiting deliveries now wait on disk (memory holds those due soon), and the limit is per project, HOOKLINE_MAX_WAITING_PER_PROJECT (default 10000000); set that instead',
    ]);
    expect(settingsFromEnvironment({ HOOKLINE_MAX_LIVE_DELIVERIES: '5000' }).maxWaitingPerProject).toBe(10_000_000);
  });
});
