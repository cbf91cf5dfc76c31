import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, HooklineError, isHooklineError } from '../../src/errors.js';

describe('error codes', () => {
  const apiPage = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

  it.each(Object.entries(ERROR_CODES))('%s is documented in docs/api.md and says what to do', (_code, entry) => {
    expect(apiPage).toContain(`\`${entry.apiCode}\``);
    expect(entry.doc.length).toBeGreaterThan(10);
    expect(entry.apiCode).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  it('serialises as the API error body and is recognised by code', () => {
    const error = new HooklineError('HOOKLINE_ERR_EVENT_ID_CONFLICT', 'used before', { details: [{ path: 'body.id', message: 'taken' }] });
    expect(error.toJSON()).toEqual({ error: { code: 'event_id_conflict', message: 'used before', details: [{ path: 'body.id', message: 'taken' }] } });
    expect(error.status).toBe(409);
    expect(isHooklineError(error)).toBe(true);
    expect(isHooklineError(new Error('plain'))).toBe(false);
  });
});
