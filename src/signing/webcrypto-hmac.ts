import type { HmacBackend } from './backend.js';
import { constantTimeEqual } from './bytes.js';
import { signedContent } from './content.js';

/** The portable path for runtimes without node:crypto (browsers, workers, edge functions). */
export const webCryptoHmacBackend: HmacBackend = {
  name: 'webcrypto',
  async sign(key, id, timestamp, body) {
    const subtle = globalThis.crypto.subtle;
    const cryptoKey = await subtle.importKey('raw', key as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const content = signedContent(id, timestamp, body);
    return new Uint8Array(await subtle.sign('HMAC', cryptoKey, content as BufferSource));
  },
  equal: constantTimeEqual,
};
