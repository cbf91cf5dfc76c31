/**
 * The API key lives in sessionStorage: it survives a reload of this tab, is gone when the tab
 * closes, is never put in a URL, and is sent only as the bearer token of API calls.
 */
const STORAGE_KEY = 'hookline.apiKey';

export function loadApiKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function saveApiKey(apiKey: string): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, apiKey);
  } catch {
    // Storage refused (private mode quotas): the key then lasts as long as the page.
  }
}

export function clearApiKey(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}

/**
 * A portal link's token, from an address `…/ui/portal#portal=hlp_…`, or null. The token is in the
 * fragment, which the browser never sends (no server, proxy or access log sees it). It is taken
 * out of the address at once, so it stays in neither the history nor a copied URL; the dashboard
 * then keeps it like an API key and exchanges it for the session (`GET /v1/portal-session`).
 */
/** Whether the dashboard holds a portal link's token rather than an API key. */
export function isPortalToken(credential: string): boolean {
  return credential.startsWith('hlp_');
}

export function takePortalToken(): string | null {
  const match = /^#portal=(hlp_[A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!match) return null;
  history.replaceState(null, '', `${location.pathname}${location.search}#/overview`);
  return match[1]!;
}
