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
