import { describe, expect, it } from 'vitest';
import { basicAuthorization, maskUrlCredentials } from '../../src/transport/url-credentials.js';

const decoded = (authorization: string | null) => (authorization === null ? null : Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString('utf8'));

describe('basicAuthorization', () => {
  it.each([
    ['https://bob:s3cret@receiver.example/hook', 'bob:s3cret'],
    ['https://bob:p%40ss%3Aw%C3%B6rd@receiver.example/hook', 'bob:p@ss:wörd'],
    // The parser takes the last @ as the end of the userinfo, and encodes the ones before it.
    ['https://bob:p@ss@receiver.example/hook', 'bob:p@ss'],
    ['https://token@receiver.example/hook', 'token:'],
    ['https://bob:%zz@receiver.example/hook', 'bob:%zz'],
    ['https://receiver.example/hook', null],
  ])('%s → %s', (url, expected) => {
    expect(decoded(basicAuthorization(new URL(url)))).toBe(expected);
  });
});

describe('maskUrlCredentials', () => {
  it.each([
    ['https://bob:s3cret@receiver.example/hook?a=1', 'https://bob:***@receiver.example/hook?a=1'],
    ['https://bob:p@ss@receiver.example/hook', 'https://bob:***@receiver.example/hook'],
    ['https://sk_live_token@receiver.example/hook', 'https://***@receiver.example/hook'],
    ['https://receiver.example', 'https://receiver.example'],
    ['not a url', 'not a url'],
  ])('%s → %s', (url, expected) => {
    expect(maskUrlCredentials(url)).toBe(expected);
  });
});
