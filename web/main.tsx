import { render } from 'preact';
import { App } from './app.js';
import { saveApiKey, takePortalToken } from './session.js';

// Before the first render: the router must not see the token as a page.
const portalToken = takePortalToken();
if (portalToken) saveApiKey(portalToken);

render(<App />, document.getElementById('app')!);
