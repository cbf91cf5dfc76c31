/**
 * Credentials in a target URL (`https://bob:s3cret@receiver.example/hook`), taken as Svix and Convoy
 * take them: sent as HTTP Basic authentication (RFC 7617), never in the request line, and masked
 * wherever the URL is shown to someone other than the operator who configured it.
 */

/**
 * `Basic base64(user:password)` for a URL with userinfo, each part percent-decoded (a `%40` in the
 * password is an `@`) and encoded as UTF-8; null when the URL names neither. A part whose percent
 * escapes are malformed (`%zz`) is sent as written, as the URL parser kept it.
 */
export function basicAuthorization(url: URL): string | null {
  if (url.username === '' && url.password === '') return null;
  return `Basic ${Buffer.from(`${percentDecoded(url.username)}:${percentDecoded(url.password)}`, 'utf8').toString('base64')}`;
}

function percentDecoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * `url` with its password replaced by `***` (`https://bob:***@receiver.example/hook`), or, when it
 * has a username alone (a token used as one), that username; the URL as given when it carries no
 * credentials, or is not a URL at all.
 */
export function maskUrlCredentials(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.password !== '') parsed.password = '***';
  else if (parsed.username !== '') parsed.username = '***';
  else return url;
  return parsed.href;
}
