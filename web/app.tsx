import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { DashboardApi } from './api.js';
import { SessionEnd } from './components/session-end.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { DeliveriesPage } from './pages/deliveries.js';
import { LoginPage } from './pages/login.js';
import { OverviewPage } from './pages/overview.js';
import { ReplayPage } from './pages/replay.js';
import { WebhookPage } from './pages/webhook.js';
import type { Page } from './router.js';
import { href, useRoute } from './router.js';
import { clearApiKey, isPortalToken, loadApiKey, saveApiKey } from './session.js';

const NAV: { page: Page; label: string }[] = [
  { page: 'overview', label: 'States' },
  { page: 'deliveries', label: 'Delivery log' },
  { page: 'dead-letters', label: 'Dead letters' },
  { page: 'webhook', label: 'Webhook' },
  { page: 'replay', label: 'Replay' },
];

export function App() {
  const [apiKey, setApiKey] = useState<string | null>(loadApiKey);
  const [reason, setReason] = useState<string | null>(null);
  const route = useRoute();

  const signOut = useCallback((why: string | null) => {
    clearApiKey();
    setApiKey(null);
    setReason(why);
  }, []);
  const api = useMemo(() => {
    if (!apiKey) return null;
    const refused = isPortalToken(apiKey) ? 'This portal link has expired or was revoked (401 unauthorized). Ask for a new link.' : 'Hookline no longer accepts this key (401 unauthorized). Sign in again.';
    return new DashboardApi(apiKey, () => signOut(refused));
  }, [apiKey, signOut]);

  const label = NAV.find((item) => item.page === route.page)!.label;
  useEffect(() => {
    document.title = api ? `${label} · Hookline` : 'Sign in · Hookline';
  }, [api, label]);

  // After a page change, focus its heading so keyboard and screen reader users start there.
  const firstPage = useRef(true);
  useEffect(() => {
    if (firstPage.current) {
      firstPage.current = false;
      return;
    }
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [route.page]);

  if (!api) {
    return (
      <LoginPage
        reason={reason}
        onSignedIn={(key) => {
          saveApiKey(key);
          setReason(null);
          setApiKey(key);
        }}
      />
    );
  }

  return (
    <>
      <a
        class="skip-link"
        href="#main"
        onClick={(event) => {
          event.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="site-header">
        <span class="brand">Hookline</span>
        <nav aria-label="Dashboard">
          <ul>
            {NAV.map((item) => (
              <li key={item.page}>
                <a href={href(item.page)} aria-current={item.page === route.page ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <SessionEnd api={api} onEnded={signOut} />
        <button type="button" class="signout" onClick={() => signOut(null)}>
          Sign out
        </button>
      </header>
      <main id="main" class="page" tabIndex={-1}>
        {route.page === 'overview' && <OverviewPage api={api} />}
        {route.page === 'deliveries' && <DeliveriesPage api={api} openId={route.param} />}
        {route.page === 'dead-letters' && <DeadLettersPage api={api} openId={route.param} />}
        {route.page === 'webhook' && <WebhookPage api={api} />}
        {route.page === 'replay' && <ReplayPage api={api} />}
      </main>
    </>
  );
}
