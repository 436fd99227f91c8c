/**
 * The dashboard's browser app: the page's one script (inline, admitted by its hash: lib/web/assets.ts
 * pageCsp). It drives the public v2 account API with the JWT, and the evidence API with one of the
 * account's keys; nothing else. Decisions (docs/dashboard.md):
 * - The JWT lives in sessionStorage (this tab only, gone with it), never in a cookie, so no other
 *   site can ride on it. A 401 from an account call, or the token's `exp` passing, asks for the
 *   password again in place: the page keeps its state and the interrupted action runs again.
 * - The file actions need an API key (the evidence endpoints take no JWT). The tab keeps the key
 *   it was last shown (at sign-up or "Create key"), or one pasted, in sessionStorage too.
 * - Files are hashed with WebCrypto and never leave the browser: only the SHA-256 is sent.
 * - "Anchor a file" acts as a phone app does (device.ts): this browser holds an Ed25519 device key
 *   and its chain position; the position advances only on success; a 409 chain_index_conflict
 *   re-reads the chain from GET /api/v1/chain/all/{public_key_hex} and tries once more.
 *
 * How it reaches the browser: this file is the entry of a small esbuild bundle (this folder's
 * modules only, no dependencies: the build refuses any other import), an IIFE for ES2020
 * browsers, not minified. infra/dashboard-script.ts
 * builds it and writes the text into lib/web/dashboard-script.ts (generated, committed:
 * `npm run build:dashboard`; `npm start` runs it first, and test/web/dashboard-script.test.ts fails
 * when the committed text is not what this source builds to). The page inlines that string and the
 * CSP admits it by its SHA-256, so no Lambda bundle carries esbuild or this source.
 *
 * Type-checked as browser code by this folder's tsconfig.json (ES2020 and DOM, no Node types), as
 * part of `npm run typecheck`.
 */
import {
  call,
  EMAIL,
  KEY,
  problem,
  problemOf,
  store,
  TOKEN,
  type AccountInfo,
  type ApiKeyRecord,
  type ApiResult,
  type EvidenceList,
  type KeyList,
  type NewKey,
  type RegisterAnswer,
  type Usage,
} from './api.js';
import { loadDevice } from './device.js';
import { fileAction, renderDevice } from './files.js';
import { $, busy, confirmInPlace, el, input, link, messageOf, number, say, show, when } from './dom.js';
import { webhookPanel } from './webhooks.js';

type Retry = () => unknown;

const state: { info: AccountInfo | null; pending: Retry | null; expiryTimer: number } = { info: null, pending: null, expiryTimer: 0 };

const button = (id: string): HTMLButtonElement => $(id, HTMLButtonElement);
const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

// ---------------------------------------------------------------- the session (JWT in sessionStorage)
/** The token's `exp` in ms (0 if unreadable). */
function tokenExpiry(token: string): number {
  try {
    const payload = token.split('.')[1] ?? '';
    return (JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { exp: number }).exp * 1000;
  } catch {
    return 0;
  }
}
function startSession(token: string, email: string): void {
  store.setItem(TOKEN, token);
  store.setItem(EMAIL, email);
  clearTimeout(state.expiryTimer);
  const left = tokenExpiry(token) - Date.now();
  // setTimeout holds at most ~24.8 days; a token lives an hour or so.
  if (left > 0 && left < 2147483647) state.expiryTimer = window.setTimeout(() => expired(null), left);
}
/** The session ended under the user's feet: ask for the password again, keep everything else. */
function expired(retry: Retry | null): void {
  state.pending = retry;
  store.removeItem(TOKEN);
  clearTimeout(state.expiryTimer);
  input('auth-email').value = store.getItem(EMAIL) || input('auth-email').value;
  input('auth-password').value = '';
  show($('expired-note'), true);
  show($('account'), false);
  show($('signed-out'), true);
  input('auth-password').focus();
}
/** An account call with the JWT; a 401 returns the user to log in and runs `again` after it. */
async function accountCall(method: string, path: string, json: unknown, again: Retry): Promise<ApiResult> {
  const res = await call(method, path, { jwt: true, json });
  if (res.status === 401) {
    expired(again);
    throw new Error('expired');
  }
  return res;
}
function logOut(): void {
  store.removeItem(TOKEN);
  store.removeItem(KEY);
  clearTimeout(state.expiryTimer);
  state.info = null;
  state.pending = null;
  input('auth-password').value = '';
  $('new-key-box').hidden = true;
  webhooks.reset();
  $('result').replaceChildren();
  say('auth-message', 'You are logged out.', 'ok');
  show($('expired-note'), false);
  show($('account'), false);
  show($('signed-out'), true);
  input('auth-email').focus();
}

async function authenticate(mode: 'register' | 'login'): Promise<void> {
  const email = input('auth-email').value.trim();
  const password = input('auth-password').value;
  if (!email || !password) {
    say('auth-message', 'Enter your e-mail address and a password.', 'bad');
    input(email ? 'auth-password' : 'auth-email').focus();
    return;
  }
  const pressed = button(mode === 'register' ? 'register-button' : 'login-button');
  busy(pressed, true);
  say('auth-message', mode === 'register' ? 'Creating your account…' : 'Logging in…');
  const previous = store.getItem(EMAIL);
  const res = await call('POST', '/api/v2/account/' + mode, { json: { email, password } });
  busy(pressed, false);
  if (res.status !== 200) {
    const code = problemOf(res).code;
    const text =
      code === 'email_exists'
        ? 'An account with this e-mail address already exists. Log in instead.'
        : code === 'password_too_short'
          ? problem(res)
          : code === 'invalid_credentials'
            ? 'The e-mail address or the password is wrong.'
            : problem(res);
    say('auth-message', text, 'bad');
    input('auth-password').focus();
    return;
  }
  const body = res.body as RegisterAnswer;
  input('auth-password').value = '';
  say('auth-message', '');
  const sameAccount = previous && previous.toLowerCase() === email.toLowerCase();
  if (!sameAccount) {
    store.removeItem(KEY);
    input('api-key').value = '';
    $('new-key-box').hidden = true;
    $('result').replaceChildren();
  }
  startSession(body.token, email);
  show($('expired-note'), false);
  show($('signed-out'), false);
  show($('account'), true);
  if (mode === 'register') showNewKey(body.api_key, 'Your first API key');
  const retry = sameAccount ? state.pending : null;
  state.pending = null;
  await refresh();
  if (retry) retry();
  // Focus moves to the account only if the user has not moved on meanwhile (never steal it).
  else if (document.activeElement === document.body || $('signed-out').contains(document.activeElement)) $('account-heading').focus();
}

// ---------------------------------------------------------------- account, usage, keys
/**
 * Reloads the account's info, usage and keys, then its recent evidence. A load that fails has
 * said so itself (its message, or the login prompt of an expired session): that ends the refresh,
 * the evidence load's failure included (it was left unhandled: a page error).
 */
function refresh(): Promise<void> {
  return Promise.all([loadInfo(), loadUsage(), loadKeys(), webhooks.load(refresh)])
    .then(loadEvidence)
    .catch(() => {});
}
async function loadInfo(): Promise<void> {
  const res = await accountCall('GET', '/api/v2/account/info', undefined, refresh);
  if (res.status !== 200) {
    say('account-message', problem(res), 'bad');
    return;
  }
  const info = res.body as AccountInfo;
  state.info = info;
  $('who').textContent = info.email;
  $('tier').textContent = capitalised(info.tier);
  $('key-count').textContent = info.active_keys + ' of ' + info.max_keys + ' keys active';
  renderActions();
}
async function loadUsage(): Promise<void> {
  const res = await accountCall('GET', '/api/v2/account/usage', undefined, refresh);
  if (res.status !== 200) {
    say('account-message', problem(res), 'bad');
    return;
  }
  const u = res.body as Usage;
  $('usage-used').textContent = number(u.used) + ' / ' + number(u.monthly_quota);
  $('usage-tier').textContent = capitalised(u.tier);
  $('usage-reset').textContent = when(u.resets_at);
  $('usage-rate').textContent = number(u.rate_per_minute) + ' requests per minute';
  const meter = $('usage-meter', HTMLMeterElement);
  meter.value = Math.min(u.used, u.monthly_quota);
  meter.max = u.monthly_quota;
}
async function loadKeys(): Promise<void> {
  const res = await accountCall('GET', '/api/v2/account/keys', undefined, refresh);
  if (res.status !== 200) {
    say('keys-message', problem(res), 'bad');
    return;
  }
  const rows = (res.body as KeyList).keys.map((k) => {
    const label = k.name || k.prefix;
    const actions = el('td');
    if (k.active) {
      const deactivate = el('button', { type: 'button', 'aria-label': 'Deactivate key ' + label, text: 'Deactivate' });
      deactivate.addEventListener('click', () => confirmDeactivate(k, label, actions, deactivate));
      actions.appendChild(deactivate);
    }
    // data-label names each cell where a narrow screen shows the rows as cards (assets.ts).
    return el('tr', {}, [
      el('td', { 'data-label': 'Name', text: k.name || '(no name)' }),
      el('td', { 'data-label': 'Prefix' }, [el('code', { text: k.prefix + '…' })]),
      el('td', { 'data-label': 'Created', text: when(k.created_at) }),
      el('td', { 'data-label': 'Last used', text: when(k.last_used_at) }),
      el('td', { 'data-label': 'State', text: k.active ? 'active' : 'deactivated ' + when(k.deactivated_at) }),
      actions,
    ]);
  });
  $('keys-body').replaceChildren(...rows);
  show($('keys-empty'), rows.length === 0);
}
function confirmDeactivate(k: ApiKeyRecord, label: string, cell: HTMLElement, deactivate: HTMLButtonElement): void {
  const ask = { label: 'Confirm deactivation', question: 'Deactivate "' + label + '"? It stops working at once and cannot be turned back on.', yes: 'Yes, deactivate' };
  confirmInPlace(cell, deactivate, ask, async function run(yes): Promise<void> {
    const res = await accountCall('DELETE', '/api/v2/account/keys/' + encodeURIComponent(k.key_id), undefined, () => run(yes));
    if (res.status !== 200) {
      say('keys-message', problem(res), 'bad');
      busy(yes, false);
      return;
    }
    const held = store.getItem(KEY);
    if (held && held.indexOf(k.prefix) === 0) {
      store.removeItem(KEY);
      input('api-key').value = '';
    }
    say('keys-message', 'Key "' + label + '" is deactivated: requests with it are refused from now on.', 'ok');
    await Promise.all([loadKeys(), loadInfo()]);
    $('keys-heading').focus();
  });
}
function showNewKey(key: string, title: string): void {
  $('new-key-title').textContent = title;
  $('new-key').textContent = key;
  $('new-key-box').hidden = false;
  store.setItem(KEY, key);
  input('api-key').value = key;
}
function createKey(): void {
  const create = button('create-key-button');
  const name = input('key-name').value.trim();
  busy(create, true);
  const run = async (): Promise<void> => {
    const res = await accountCall('POST', '/api/v2/account/keys', name ? { name } : {}, run);
    busy(create, false);
    if (res.status !== 200) {
      say('keys-message', problem(res), 'bad');
      return;
    }
    input('key-name').value = '';
    say('keys-message', '');
    showNewKey((res.body as NewKey).api_key, 'Your new key' + (name ? ' "' + name + '"' : ''));
    await Promise.all([loadKeys(), loadInfo()]);
    $('new-key-title').focus();
  };
  run().catch(() => busy(create, false));
}

// ---------------------------------------------------------------- the file actions the tier has
/** Shows the file actions the account's tier has, and this browser's device key for anchoring. */
function renderActions(): void {
  const features = (state.info && state.info.features) || [];
  const starter = features.indexOf('timestamp') >= 0;
  const pro = features.indexOf('anchor') >= 0;
  show($('timestamp-button'), starter);
  show($('sign-button'), features.indexOf('ed25519_signing') >= 0);
  show($('anchor-button'), pro);
  show($('device'), pro);
  $('tier-note').textContent = pro
    ? ''
    : starter
      ? 'Anchoring a file (signature, timestamp and ledger transaction) needs the Pro tier.'
      : 'Your tier registers hashes through the API. Time-stamping and signing files need Starter; anchoring needs Pro.';
  if (pro) {
    loadDevice().then(renderDevice, (e: unknown) => {
      $('tier-note').textContent = 'This browser cannot keep an Ed25519 device key (' + messageOf(e) + '), so it cannot anchor files.';
      show($('anchor-button'), false);
    });
  }
}

// ---------------------------------------------------------------- recent evidence
async function loadEvidence(): Promise<void> {
  const res = await accountCall('GET', '/api/v2/account/evidence?limit=10', undefined, refresh);
  if (res.status !== 200) {
    say('evidence-message', problem(res), 'bad');
    return;
  }
  const items = (res.body as EvidenceList).items.map((it) => {
    const parts: (Node | string)[] = [el('code', { text: it.image_hash.slice(0, 16) + '…' }), ' ' + it.proofs.join(', ') + ' · ' + when(it.at) + ' · '];
    parts.push(link('/verify/' + it.image_hash, 'verify'));
    if (it.proofs.indexOf('anchored') >= 0) parts.push(' · ', link('/api/v2/evidence/receipt/' + it.image_hash, 'receipt'));
    return el('li', {}, parts);
  });
  $('evidence-list').replaceChildren(...items);
  show($('evidence-empty'), items.length === 0);
}

// ---------------------------------------------------------------- wiring
const webhooks = webhookPanel(accountCall);
$('auth-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const submitter = (event as SubmitEvent).submitter;
  void authenticate(submitter && submitter.id === 'register-button' ? 'register' : 'login');
});
$('logout-button').addEventListener('click', logOut);
$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  createKey();
});
$('copy-key').addEventListener('click', () => {
  const key = $('new-key').textContent ?? '';
  const done = (ok: boolean) => say('copy-message', ok ? 'Copied.' : 'Select the key and copy it by hand.', ok ? 'ok' : 'bad');
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(key).then(
      () => done(true),
      () => done(false),
    );
  } else done(false);
});
$('refresh-button').addEventListener('click', () => {
  void refresh();
});
$('file-form').addEventListener('submit', (event) => event.preventDefault());
for (const kind of ['timestamp', 'sign', 'anchor'] as const) {
  $(kind + '-button').addEventListener('click', () => {
    // Once a file action is done, the usage and the recent evidence show it.
    void fileAction(kind, button(kind + '-button'), () => {
      loadUsage()
        .then(loadEvidence)
        .catch(() => {});
    });
  });
}
input('api-key').value = store.getItem(KEY) || '';
input('api-key').addEventListener('change', () => {
  const v = input('api-key').value.trim();
  if (v) store.setItem(KEY, v);
  else store.removeItem(KEY);
});

const token = store.getItem(TOKEN);
if (token && tokenExpiry(token) > Date.now()) {
  startSession(token, store.getItem(EMAIL) || '');
  show($('signed-out'), false);
  show($('account'), true);
  void refresh();
} else if (token) expired(null);
else {
  show($('signed-out'), true);
  show($('account'), false);
}
