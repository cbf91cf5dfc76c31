import { useEffect, useState } from 'preact/hooks';
import type { DashboardApi } from '../api.js';
import type { PortalSession } from '../../src/sdk/types.js';

/** Longest setTimeout Node and browsers honour; a portal session is at most 7 days, well below. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * For a portal link's session: when it ends (and that it is read-only), and the sign-out when it
 * does. An API key's session has no end, and shows nothing.
 */
export function SessionEnd({ api, onEnded }: { api: DashboardApi; onEnded: (why: string) => void }) {
  const [session, setSession] = useState<PortalSession | null>(null);

  useEffect(() => {
    const controller = new AbortController();
    api.client.getPortalSession({ signal: controller.signal }).then(setSession, () => undefined);
    return () => controller.abort();
  }, [api]);

  useEffect(() => {
    if (!session?.expiresAt) return;
    const endsAt = Date.parse(session.expiresAt);
    const timer = setTimeout(() => onEnded(`This portal session ended at ${new Date(endsAt).toLocaleString()}. Ask for a new link.`), Math.min(MAX_TIMER_MS, Math.max(0, endsAt - Date.now())));
    return () => clearTimeout(timer);
  }, [session, onEnded]);

  if (!session?.expiresAt) return null;
  const endsAt = new Date(session.expiresAt);
  return (
    <p class="session-end" data-testid="session-end">
      {session.readOnly ? 'Read-only · ' : ''}Session ends <time dateTime={session.expiresAt}>{endsAt.toLocaleString()}</time>
    </p>
  );
}
