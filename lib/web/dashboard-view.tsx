/**
 * `/dashboard`: the account holder's page. The server sends a fixed shell (no account data: it is
 * the same for everyone and cacheable); the inline script fills it from the public v2 account API:
 * DASHBOARD_SCRIPT, bundled from the browser app lib/web/dashboard/app.ts into the generated
 * dashboard-script.ts (infra/dashboard-script.ts). Every id the app looks up is an element here.
 * Without JavaScript it says so and points to the API.
 */
import type { FC } from 'hono/jsx';
import { MIN_PASSWORD_LENGTH } from '../accounts/passwords.js';
import { DASHBOARD_SCRIPT } from './dashboard-script.js';
import { WebhooksSection } from './dashboard-webhooks-view.js';
import { Page } from './layout.js';

export const DashboardPage: FC = () => (
  <Page
    title="Dashboard — Evidence anchoring service"
    description="Sign up or log in, manage your API keys and webhooks, see your usage, and time-stamp, sign or anchor files without uploading them."
    inlineScript={DASHBOARD_SCRIPT}
  >
    <h1>Dashboard</h1>
    <noscript>
      <p>
        The dashboard needs JavaScript. Everything it does is in the API: see the <a href="/docs">API reference</a>.
      </p>
    </noscript>

    <section id="signed-out" aria-labelledby="auth-heading" hidden>
      <h2 id="auth-heading">Sign up or log in</h2>
      <p id="expired-note" class="message warn" role="alert" hidden>
        Your session has expired. Log in again to continue where you were.
      </p>
      <form id="auth-form" class="panel" method="post" action="#" novalidate>
        <label for="auth-email">Email</label>
        <input id="auth-email" name="email" type="email" autocomplete="username" required />
        <label for="auth-password">Password</label>
        <input id="auth-password" name="password" type="password" autocomplete="current-password" aria-describedby="password-hint" required />
        <p id="password-hint" class="muted">A new account needs a password of at least {MIN_PASSWORD_LENGTH} characters.</p>
        <p class="buttons">
          <button id="login-button" type="submit" class="primary">
            Log in
          </button>
          <button id="register-button" type="submit">
            Create account
          </button>
        </p>
        <p id="auth-message" class="message" role="status" aria-live="polite"></p>
      </form>
      <p class="muted">
        The session is kept in this tab only (sessionStorage), never in a cookie, and ends when the tab is closed or after an hour.
      </p>
    </section>

    <div id="account" hidden>
      <section aria-labelledby="account-heading">
        <h2 id="account-heading" tabindex={-1}>
          Your account
        </h2>
        <p>
          Logged in as <strong id="who"></strong>, <span id="tier"></span> tier, <span id="key-count"></span>.{' '}
          <button id="logout-button" type="button">
            Log out
          </button>
        </p>
        <p id="account-message" class="message" role="status" aria-live="polite"></p>
      </section>

      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading">Usage this month</h2>
        <dl class="facts">
          <dt>Used / quota</dt>
          <dd>
            <strong id="usage-used"></strong>{' '}
            <meter id="usage-meter" min={0} value={0} max={1} aria-label="Share of the monthly quota used"></meter>
          </dd>
          <dt>Tier</dt>
          <dd id="usage-tier"></dd>
          <dt>Quota resets</dt>
          <dd id="usage-reset"></dd>
          <dt>Rate limit</dt>
          <dd id="usage-rate"></dd>
        </dl>
        <p>
          <button id="refresh-button" type="button">
            Refresh
          </button>
        </p>
      </section>

      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading" tabindex={-1}>
          API keys
        </h2>
        <p class="muted">Evidence requests carry a key in the X-API-Key header. An account holds up to 5 active keys.</p>
        <form id="key-form" class="panel" method="post" action="#">
          <label for="key-name">Key name (optional)</label>
          <input id="key-name" name="name" type="text" maxlength={100} autocomplete="off" />
          <p class="buttons">
            <button id="create-key-button" type="submit" class="primary">
              Create key
            </button>
          </p>
        </form>
        <div id="new-key-box" class="new-key" hidden>
          <h3 id="new-key-title" tabindex={-1}></h3>
          <p>
            <strong>Copy it now: it is shown only once.</strong> The service keeps only its SHA-256. This tab uses it for the file actions below.
          </p>
          <p>
            <code id="new-key"></code>
          </p>
          <p>
            <button id="copy-key" type="button">
              Copy key
            </button>{' '}
            <span id="copy-message" class="message" role="status" aria-live="polite"></span>
          </p>
        </div>
        <p id="keys-message" class="message" role="status" aria-live="polite"></p>
        <div class="table-scroll">
          <table class="keys">
            <caption class="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="visually-hidden">Action</span>
                </th>
              </tr>
            </thead>
            <tbody id="keys-body"></tbody>
          </table>
        </div>
        <p id="keys-empty" class="muted" hidden>
          No keys yet.
        </p>
      </section>

      <section aria-labelledby="files-heading">
        <h2 id="files-heading">Files</h2>
        <p>
          The file stays in this browser: it is hashed here with SHA-256 and <strong>only the hash is sent</strong>.
        </p>
        <form id="file-form" class="panel" method="post" action="#">
          <label for="api-key">API key for this tab</label>
          <input id="api-key" name="api_key" type="password" autocomplete="off" spellcheck={false} aria-describedby="api-key-hint" />
          <p id="api-key-hint" class="muted">Filled in with the key you were last shown; or paste one of your keys.</p>
          <label for="file">File</label>
          <input id="file" name="file" type="file" />
          <p class="buttons">
            <button id="timestamp-button" type="button" hidden>
              Timestamp a file
            </button>
            <button id="sign-button" type="button" hidden>
              Sign a file
            </button>
            <button id="anchor-button" type="button" class="primary" hidden>
              Anchor a file
            </button>
          </p>
          <p id="tier-note" class="muted"></p>
          <p id="file-message" class="message" role="status" aria-live="polite"></p>
        </form>
        <div id="result" aria-live="polite"></div>
        <div id="device" hidden>
          <h3>This browser's device key</h3>
          <p class="muted">
            Anchoring works as a phone app does: this browser holds an Ed25519 key (its private half cannot be read, even by this page), signs each
            file's hash with it and links the hashes into the key's chain.
          </p>
          <dl class="facts">
            <dt>Public key</dt>
            <dd>
              <code id="device-key"></code>
            </dd>
            <dt>Next chain index</dt>
            <dd id="device-next"></dd>
          </dl>
          <p>
            <a id="device-chain-link" href="/api/v1/chain/all/">
              The key's chain (JSON)
            </a>
          </p>
        </div>
      </section>

      <section aria-labelledby="evidence-heading">
        <h2 id="evidence-heading">Recent evidence</h2>
        <ul id="evidence-list" class="evidence"></ul>
        <p id="evidence-empty" class="muted" hidden>
          Nothing yet: hashes you register, time-stamp, sign or anchor appear here.
        </p>
        <p id="evidence-message" class="message" role="status" aria-live="polite"></p>
      </section>

      <WebhooksSection />
    </div>
  </Page>
);
