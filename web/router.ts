/**
 * Hash routes (`#/deliveries/dlv_…`): the server serves one index.html, links work without it
 * knowing the pages, and nothing secret is ever in the address.
 */
import { useEffect, useState } from 'preact/hooks';

export const PAGES = ['overview', 'deliveries', 'dead-letters', 'webhook', 'replay'] as const;
export type Page = (typeof PAGES)[number];

export interface Route {
  page: Page;
  /** The path segment after the page: a delivery id on `deliveries`. */
  param: string | null;
}

export function parseHash(hash: string): Route {
  const [page, param] = hash.replace(/^#\/?/, '').split('/');
  const known = PAGES.find((candidate) => candidate === page);
  return { page: known ?? 'overview', param: known && param ? decodeURIComponent(param) : null };
}

export function href(page: Page, param?: string): string {
  return `#/${page}${param ? `/${encodeURIComponent(param)}` : ''}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
