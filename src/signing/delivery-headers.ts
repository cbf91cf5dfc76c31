/**
 * The headers of a Hookline delivery request, in one place: the real attempts, `hookline replay`
 * and `hookline fuzz` send the same ones, so that a receiver which checks any of them (a user-agent
 * allow-list, an operator's token header) meets under the tools exactly what real traffic sends.
 */

/** What every delivery says it is. */
export const USER_AGENT = 'Hookline/0.1 (+https://www.standardwebhooks.com)';

/**
 * The user-agent, then the operator's custom headers (a webhook's `headers`, or `--header` of the
 * tools), which may replace it, then the three signed ones, which nothing replaces.
 */
export function deliveryHeaders(custom: Readonly<Record<string, string>> | undefined, id: string, timestamp: string, signature: string): Record<string, string> {
  return { 'user-agent': USER_AGENT, ...custom, 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
}

/**
 * `deliveryHeaders` with `content-type: application/json` first, as the request goes out: for the
 * tools that write the whole request (`hookline replay`, `hookline fuzz`). The real sender adds
 * content-type itself.
 */
export function deliveryHeadersWithContentType(custom: Readonly<Record<string, string>> | undefined, id: string, timestamp: string, signature: string): Record<string, string> {
  return { 'content-type': 'application/json', ...deliveryHeaders(custom, id, timestamp, signature) };
}
