import { useState } from 'preact/hooks';
import { DashboardApi, describeError } from '../api.js';
import { Notice } from '../components/notice.js';

/**
 * Sign in with the project's API key. The key is checked with one API call before it is kept (in
 * sessionStorage, by the caller); it is never put in the address or sent anywhere but the API.
 */
export function LoginPage({ onSignedIn, reason }: { onSignedIn(apiKey: string): void; reason: string | null }) {
  const [apiKey, setApiKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const signIn = async () => {
    setBusy(true);
    setError(null);
    const key = apiKey.trim();
    try {
      await new DashboardApi(key, () => {}).stateCounts();
      onSignedIn(key);
    } catch (caught) {
      setError(describeError(caught));
      setBusy(false);
    }
  };

  return (
    <main id="main" class="login" tabIndex={-1}>
      <div class="panel login-card">
        <p class="brand large">Hookline</p>
        <h1>Sign in</h1>
        <p class="muted">Use your project's API key. It is kept in this tab only (session storage) and sent as the bearer token of API calls.</p>
        {reason && !error && <Notice kind="info">{reason}</Notice>}
        {error && <Notice kind="error">{error}</Notice>}
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void signIn();
          }}
        >
          <div class="field wide">
            <label for="login-key">Project API key</label>
            <input
              id="login-key"
              name="apiKey"
              type="password"
              required
              autocomplete="off"
              spellcheck={false}
              value={apiKey}
              onInput={(event) => setApiKey(event.currentTarget.value)}
              aria-invalid={error ? 'true' : undefined}
            />
          </div>
          <button type="submit" class="primary" disabled={busy || apiKey.trim() === ''}>
            {busy ? 'Checking…' : 'Sign in'}
          </button>
        </form>
      </div>
    </main>
  );
}
