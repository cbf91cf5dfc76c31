/**
 * An HMAC-SHA256 implementation over the Standard Webhooks signed content. Two exist: `node-hmac.ts`
 * (node:crypto, synchronous, the fast path) and `webcrypto-hmac.ts` (any runtime with WebCrypto).
 */
export interface HmacBackend {
  readonly name: 'node' | 'webcrypto';
  /** HMAC-SHA256 of `<id>.<timestamp>.<body>` under `key`. */
  sign(key: Uint8Array, id: string, timestamp: string, body: string | Uint8Array): Uint8Array | Promise<Uint8Array>;
  /** Constant-time equality of two signatures. */
  equal(a: Uint8Array, b: Uint8Array): boolean;
}

let defaultBackend: Promise<HmacBackend> | undefined;

/**
 * node:crypto where it exists, WebCrypto elsewhere. Loaded lazily by dynamic import so that a
 * bundle for a browser or an edge runtime never has to resolve `node:crypto`.
 */
export function loadDefaultBackend(): Promise<HmacBackend> {
  defaultBackend ??= import('./node-hmac.js')
    .then((module) => module.nodeHmacBackend as HmacBackend)
    .catch(() => import('./webcrypto-hmac.js').then((module) => module.webCryptoHmacBackend));
  return defaultBackend;
}
