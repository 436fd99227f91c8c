/**
 * The dashboard's one script (inline, admitted by its hash: lib/web/assets.ts pageCsp). It drives
 * the public v2 account API with the JWT, and the evidence API with one of the account's keys;
 * nothing else. Decisions (README "Dashboard"):
 * - The JWT lives in sessionStorage (this tab only, gone with it), never in a cookie, so no other
 *   site can ride on it. A 401 from an account call, or the token's `exp` passing, asks for the
 *   password again in place: the page keeps its state and the interrupted action runs again.
 * - The file actions need an API key (the evidence endpoints take no JWT). The tab keeps the key
 *   it was last shown (at sign-up or "Create key"), or one pasted, in sessionStorage too.
 * - Files are hashed with WebCrypto and never leave the browser: only the SHA-256 is sent.
 * - "Anchor a file" acts as a phone app does: this browser holds an Ed25519 device key
 *   (WebCrypto, generated non-extractable and kept in IndexedDB: its private half cannot be read
 *   by any script, ours included) and its chain position; it signs the hash's 32 bytes and links
 *   chain_hash = SHA-256(previous chain_hash or 32 zero bytes ‖ hash) (CONTRACT "Device chains").
 *   The position advances only on success; a 409 chain_index_conflict re-reads the chain from
 *   GET /api/v1/chain/all/{public_key_hex} and tries once more.
 * Plain ES2020 with no dependencies: it runs as written in every current browser.
 */
export const DASHBOARD_SCRIPT = `
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var store = window.sessionStorage;
  var TOKEN = 'eas.dashboard.token', EMAIL = 'eas.dashboard.email', KEY = 'eas.dashboard.apiKey';
  var state = { info: null, pending: null, expiryTimer: 0 };

  // ---------------------------------------------------------------- small helpers
  function show(el, on) { el.hidden = !on; }
  function say(id, text, tone) {
    var el = $(id);
    el.textContent = text || '';
    el.className = 'message' + (tone ? ' ' + tone : '');
  }
  function hex(bytes) { return Array.prototype.map.call(new Uint8Array(bytes), function (b) { return (b < 16 ? '0' : '') + b.toString(16); }).join(''); }
  function unhex(text) { var out = new Uint8Array(text.length / 2); for (var i = 0; i < out.length; i++) out[i] = parseInt(text.substr(i * 2, 2), 16); return out; }
  function when(iso) { if (!iso) return 'never'; var d = new Date(iso); return isNaN(d) ? iso : d.toISOString().replace('T', ' ').replace(/\\.\\d{3}Z$/, ' UTC'); }
  function number(n) { return Number(n).toLocaleString('en-US'); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { if (k === 'text') node.textContent = attrs[k]; else node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function link(href, text) { return el('a', { href: href, text: text }); }
  function busy(button, on) { button.disabled = on; button.setAttribute('aria-busy', on ? 'true' : 'false'); }

  /** One API call; resolves to {status, body, headers}. A network failure resolves to status 0. */
  function call(method, path, options) {
    options = options || {};
    var headers = { Accept: 'application/json' };
    if (options.jwt) headers.Authorization = 'Bearer ' + store.getItem(TOKEN);
    if (options.apiKey) headers['X-API-Key'] = options.apiKey;
    if (options.json !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(path, { method: method, headers: headers, body: options.json === undefined ? undefined : JSON.stringify(options.json), cache: 'no-store', credentials: 'omit' })
      .then(function (res) {
        var type = res.headers.get('content-type') || '';
        var body = /json/.test(type) ? res.json() : options.binary ? res.blob() : res.text();
        return body.then(function (b) { return { status: res.status, body: b, headers: res.headers }; });
      }, function () { return { status: 0, body: { detail: 'The service could not be reached. Check the connection and try again.' }, headers: new Headers() }; });
  }
  function problem(res) {
    var b = res.body || {};
    return (b.detail || b.title || ('The service answered ' + res.status + '.')) + (res.status === 429 && res.headers.get('retry-after') ? ' Try again in ' + res.headers.get('retry-after') + ' s.' : '');
  }

  // ---------------------------------------------------------------- the session (JWT in sessionStorage)
  function tokenExpiry(token) {
    try { return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).exp * 1000; } catch (e) { return 0; }
  }
  function startSession(token, email) {
    store.setItem(TOKEN, token);
    store.setItem(EMAIL, email);
    clearTimeout(state.expiryTimer);
    var left = tokenExpiry(token) - Date.now();
    // setTimeout holds at most ~24.8 days; a token lives an hour or so.
    if (left > 0 && left < 2147483647) state.expiryTimer = setTimeout(function () { expired(null); }, left);
  }
  /** The session ended under the user's feet: ask for the password again, keep everything else. */
  function expired(retry) {
    state.pending = retry;
    store.removeItem(TOKEN);
    clearTimeout(state.expiryTimer);
    $('auth-email').value = store.getItem(EMAIL) || $('auth-email').value;
    $('auth-password').value = '';
    show($('expired-note'), true);
    show($('account'), false);
    show($('signed-out'), true);
    $('auth-password').focus();
  }
  /** An account call with the JWT; a 401 returns the user to log in and runs \`again\` after it. */
  function accountCall(method, path, json, again) {
    return call(method, path, { jwt: true, json: json }).then(function (res) {
      if (res.status === 401) { expired(again); throw new Error('expired'); }
      return res;
    });
  }
  function logOut() {
    store.removeItem(TOKEN);
    store.removeItem(KEY);
    clearTimeout(state.expiryTimer);
    state.info = null;
    state.pending = null;
    $('auth-password').value = '';
    $('new-key-box').hidden = true;
    $('result').replaceChildren();
    say('auth-message', 'You are logged out.', 'ok');
    show($('expired-note'), false);
    show($('account'), false);
    show($('signed-out'), true);
    $('auth-email').focus();
  }

  function authenticate(mode) {
    var email = $('auth-email').value.trim();
    var password = $('auth-password').value;
    if (!email || !password) { say('auth-message', 'Enter your e-mail address and a password.', 'bad'); (email ? $('auth-password') : $('auth-email')).focus(); return; }
    var button = $(mode === 'register' ? 'register-button' : 'login-button');
    busy(button, true);
    say('auth-message', mode === 'register' ? 'Creating your account…' : 'Logging in…');
    var previous = store.getItem(EMAIL);
    call('POST', '/api/v2/account/' + mode, { json: { email: email, password: password } }).then(function (res) {
      busy(button, false);
      if (res.status !== 200) {
        var code = res.body && res.body.code;
        var text = code === 'email_exists' ? 'An account with this e-mail address already exists. Log in instead.'
          : code === 'password_too_short' ? problem(res)
          : code === 'invalid_credentials' ? 'The e-mail address or the password is wrong.'
          : problem(res);
        say('auth-message', text, 'bad');
        $('auth-password').focus();
        return;
      }
      $('auth-password').value = '';
      say('auth-message', '');
      var sameAccount = previous && previous.toLowerCase() === email.toLowerCase();
      if (!sameAccount) { store.removeItem(KEY); $('api-key').value = ''; $('new-key-box').hidden = true; $('result').replaceChildren(); }
      startSession(res.body.token, email);
      show($('expired-note'), false);
      show($('signed-out'), false);
      show($('account'), true);
      if (mode === 'register') showNewKey(res.body.api_key, 'Your first API key');
      var retry = sameAccount ? state.pending : null;
      state.pending = null;
      refresh().then(function () {
        if (retry) retry();
        // Focus moves to the account only if the user has not moved on meanwhile (never steal it).
        else if (document.activeElement === document.body || $('signed-out').contains(document.activeElement)) $('account-heading').focus();
      });
    });
  }

  // ---------------------------------------------------------------- account, usage, keys
  function refresh() {
    return Promise.all([loadInfo(), loadUsage(), loadKeys()]).then(loadEvidence, function () {});
  }
  function loadInfo() {
    return accountCall('GET', '/api/v2/account/info', undefined, refresh).then(function (res) {
      if (res.status !== 200) { say('account-message', problem(res), 'bad'); return; }
      state.info = res.body;
      $('who').textContent = res.body.email;
      $('tier').textContent = res.body.tier.charAt(0).toUpperCase() + res.body.tier.slice(1);
      $('key-count').textContent = res.body.active_keys + ' of ' + res.body.max_keys + ' keys active';
      renderActions();
    });
  }
  function loadUsage() {
    return accountCall('GET', '/api/v2/account/usage', undefined, refresh).then(function (res) {
      if (res.status !== 200) { say('account-message', problem(res), 'bad'); return; }
      var u = res.body;
      $('usage-used').textContent = number(u.used) + ' / ' + number(u.monthly_quota);
      $('usage-tier').textContent = u.tier.charAt(0).toUpperCase() + u.tier.slice(1);
      $('usage-reset').textContent = when(u.resets_at);
      $('usage-rate').textContent = number(u.rate_per_minute) + ' requests per minute';
      $('usage-meter').value = Math.min(u.used, u.monthly_quota);
      $('usage-meter').max = u.monthly_quota;
    });
  }
  function loadKeys() {
    return accountCall('GET', '/api/v2/account/keys', undefined, refresh).then(function (res) {
      if (res.status !== 200) { say('keys-message', problem(res), 'bad'); return; }
      var rows = res.body.keys.map(function (k) {
        var label = k.name || k.prefix;
        var actions = el('td');
        if (k.active) {
          var button = el('button', { type: 'button', 'aria-label': 'Deactivate key ' + label, text: 'Deactivate' });
          button.addEventListener('click', function () { confirmDeactivate(k, label, actions, button); });
          actions.appendChild(button);
        }
        // data-label names each cell where a narrow screen shows the rows as cards (assets.ts).
        return el('tr', {}, [
          el('td', { 'data-label': 'Name', text: k.name || '(no name)' }), el('td', { 'data-label': 'Prefix' }, [el('code', { text: k.prefix + '…' })]),
          el('td', { 'data-label': 'Created', text: when(k.created_at) }), el('td', { 'data-label': 'Last used', text: when(k.last_used_at) }),
          el('td', { 'data-label': 'State', text: k.active ? 'active' : 'deactivated ' + when(k.deactivated_at) }), actions,
        ]);
      });
      $('keys-body').replaceChildren.apply($('keys-body'), rows);
      show($('keys-empty'), rows.length === 0);
    });
  }
  function confirmDeactivate(k, label, cell, button) {
    var yes = el('button', { type: 'button', class: 'danger', text: 'Yes, deactivate' });
    var no = el('button', { type: 'button', text: 'Cancel' });
    var question = el('p', { class: 'confirm', role: 'group', 'aria-label': 'Confirm deactivation' }, ['Deactivate "' + label + '"? It stops working at once and cannot be turned back on. ', yes, ' ', no]);
    button.hidden = true;
    cell.appendChild(question);
    no.addEventListener('click', function () { question.remove(); button.hidden = false; button.focus(); });
    yes.addEventListener('click', function () {
      busy(yes, true);
      var run = function () {
        return accountCall('DELETE', '/api/v2/account/keys/' + encodeURIComponent(k.key_id), undefined, run).then(function (res) {
          if (res.status !== 200) { say('keys-message', problem(res), 'bad'); busy(yes, false); return; }
          if (store.getItem(KEY) && store.getItem(KEY).indexOf(k.prefix) === 0) { store.removeItem(KEY); $('api-key').value = ''; }
          say('keys-message', 'Key "' + label + '" is deactivated: requests with it are refused from now on.', 'ok');
          return Promise.all([loadKeys(), loadInfo()]).then(function () { $('keys-heading').focus(); });
        });
      };
      run().catch(function () {});
    });
    yes.focus();
  }
  function showNewKey(key, title) {
    $('new-key-title').textContent = title;
    $('new-key').textContent = key;
    $('new-key-box').hidden = false;
    store.setItem(KEY, key);
    $('api-key').value = key;
  }
  function createKey() {
    var button = $('create-key-button');
    var name = $('key-name').value.trim();
    busy(button, true);
    var run = function () {
      return accountCall('POST', '/api/v2/account/keys', name ? { name: name } : {}, run).then(function (res) {
        busy(button, false);
        if (res.status !== 200) { say('keys-message', problem(res), 'bad'); return; }
        $('key-name').value = '';
        say('keys-message', '');
        showNewKey(res.body.api_key, 'Your new key' + (name ? ' "' + name + '"' : ''));
        return Promise.all([loadKeys(), loadInfo()]).then(function () { $('new-key-title').focus(); });
      });
    };
    run().catch(function () { busy(button, false); });
  }

  // ---------------------------------------------------------------- files: hashing and the device key
  function fileHash() {
    var file = $('file').files && $('file').files[0];
    if (!file) return Promise.reject(new Error('Choose a file first.'));
    if (!window.crypto || !window.crypto.subtle) return Promise.reject(new Error('This browser cannot hash files here: WebCrypto needs HTTPS.'));
    return file.arrayBuffer().then(function (bytes) { return crypto.subtle.digest('SHA-256', bytes); }).then(function (d) { return { hex: hex(d), bytes: new Uint8Array(d), name: file.name }; });
  }
  function idb() {
    return new Promise(function (resolve, reject) {
      var open = indexedDB.open('evidence-dashboard', 1);
      open.onupgradeneeded = function () { open.result.createObjectStore('device'); };
      open.onsuccess = function () { resolve(open.result); };
      open.onerror = function () { reject(open.error); };
    });
  }
  function idbDo(mode, fn) {
    return idb().then(function (db) {
      return new Promise(function (resolve, reject) {
        var tx = db.transaction('device', mode);
        var req = fn(tx.objectStore('device'));
        tx.oncomplete = function () { db.close(); resolve(req && req.result); };
        tx.onerror = function () { db.close(); reject(tx.error); };
      });
    });
  }
  /** This browser's device: {privateKey, publicHex, next, last} (created on first use). */
  function device() {
    return idbDo('readonly', function (s) { return s.get('device'); }).then(function (found) {
      if (found) return found;
      return crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']).then(function (pair) {
        return crypto.subtle.exportKey('raw', pair.publicKey).then(function (raw) {
          var d = { privateKey: pair.privateKey, publicHex: hex(raw), next: 0, last: null };
          return idbDo('readwrite', function (s) { return s.put(d, 'device'); }).then(function () { return d; });
        });
      });
    });
  }
  function saveDevice(d) { return idbDo('readwrite', function (s) { return s.put(d, 'device'); }).then(function () { renderDevice(d); return d; }); }
  function renderDevice(d) {
    $('device-key').textContent = d.publicHex;
    $('device-next').textContent = String(d.next);
    $('device-chain-link').href = '/api/v1/chain/all/' + d.publicHex;
  }
  /** The chain position as the service has it (the 409's remedy). */
  function resync(d) {
    var read = function (cursor) {
      return call('GET', '/api/v1/chain/all/' + d.publicHex + '?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')).then(function (res) {
        if (res.status === 404) { d.next = 0; d.last = null; return d; }
        if (res.status !== 200) throw new Error(problem(res));
        var entries = res.body.entries;
        if (entries.length) { var e = entries[entries.length - 1]; d.next = e.chain_index + 1; d.last = e.chain_hash; }
        return res.body.next_cursor ? read(res.body.next_cursor) : d;
      });
    };
    return read(null).then(saveDevice);
  }
  function anchorBody(d, h) {
    var prev = d.last ? unhex(d.last) : new Uint8Array(32);
    var link = new Uint8Array(64);
    link.set(prev, 0);
    link.set(h.bytes, 32);
    return Promise.all([crypto.subtle.digest('SHA-256', link), crypto.subtle.sign({ name: 'Ed25519' }, d.privateKey, h.bytes)]).then(function (r) {
      return { sha256_hash: h.hex, chain_index: d.next, chain_hash: hex(r[0]), previous_hash: d.last, signature_hex: hex(r[1]), public_key_hex: d.publicHex };
    });
  }

  // ---------------------------------------------------------------- files: the three actions
  function apiKey() {
    var key = $('api-key').value.trim();
    if (!key) throw new Error('Enter an API key first (create one above; a new key is used here automatically).');
    store.setItem(KEY, key);
    return key;
  }
  function result(children) { $('result').replaceChildren.apply($('result'), children); }
  function certificateButton(hash, key) {
    var button = el('button', { type: 'button', text: 'Download the PDF certificate' });
    button.addEventListener('click', function () {
      busy(button, true);
      call('GET', '/api/v2/evidence/certificate/' + hash, { apiKey: key, binary: true }).then(function (res) {
        busy(button, false);
        if (res.status !== 200) { say('file-message', problem(res), 'bad'); return; }
        var url = URL.createObjectURL(res.body);
        var a = el('a', { href: url, download: 'evidence-' + hash.slice(0, 16) + '.pdf' });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
      });
    });
    return button;
  }
  function facts(pairs) {
    return el('dl', { class: 'facts' }, pairs.reduce(function (all, p) { return all.concat([el('dt', { text: p[0] }), el('dd', {}, [p[1]])]); }, []));
  }
  function fileAction(kind, button) {
    var key;
    try { key = apiKey(); } catch (e) { say('file-message', e.message, 'bad'); $('api-key').focus(); return; }
    busy(button, true);
    say('file-message', 'Hashing the file in this browser (it is not uploaded)…');
    fileHash().then(function (h) {
      say('file-message', 'SHA-256 ' + h.hex + ': ' + (kind === 'anchor' ? 'anchoring (signature, timestamp and ledger transaction)…' : kind === 'sign' ? 'signing…' : 'time-stamping…'));
      if (kind === 'anchor') return anchor(h, key, true);
      return call('POST', '/api/v2/evidence/' + (kind === 'sign' ? 'sign' : 'timestamp'), { apiKey: key, json: { sha256_hash: h.hex } }).then(function (res) {
        if (res.status !== 200) throw new Error(problem(res));
        var b = res.body;
        var rows = kind === 'sign'
          ? [['File', h.name], ['SHA-256', el('code', { text: h.hex })], ['Signed at', when(b.statement.signed_at)], ['Key', el('code', { text: b.key_id })], ['Signature (Ed25519)', el('code', { text: b.signature })]]
          : [['File', h.name], ['SHA-256', el('code', { text: h.hex })], ['Time (RFC 3161)', when(b.gen_time)], ['Serial number', el('code', { text: b.serial_number })]];
        var download = kind === 'sign' ? null : el('a', { href: 'data:application/timestamp-reply;base64,' + b.timestamp_token, download: h.hex.slice(0, 16) + '.tsr', text: 'Download the token (.tsr)' });
        result([el('h3', { tabindex: '-1', id: 'result-heading', text: kind === 'sign' ? 'Signed' : 'Time-stamped' }), facts(rows), el('p', {}, download ? [download, ' ', certificateButton(h.hex, key)] : [certificateButton(h.hex, key)])]);
        say('file-message', kind === 'sign' ? 'Signed by the service.' : 'Time-stamped.', 'ok');
      });
    }).then(function () {
      busy(button, false);
      var heading = $('result-heading');
      if (heading) heading.focus();
      loadUsage().then(loadEvidence).catch(function () {});
    }, function (e) { busy(button, false); say('file-message', e.message, 'bad'); });
  }
  function anchor(h, key, firstTry) {
    return device().then(function (d) {
      return anchorBody(d, h).then(function (body) {
        return call('POST', '/api/v2/evidence/anchor', { apiKey: key, json: body }).then(function (res) {
          var code = res.body && res.body.code;
          if (res.status === 409 && code === 'chain_index_conflict' && firstTry) return resync(d).then(function () { return anchor(h, key, false); });
          if (res.status === 409 && code === 'hash_already_anchored') {
            result([el('p', {}, ['This file is already anchored: ', link('/verify/' + h.hex, 'open its verification page'), '.'])]);
            throw new Error('This file was anchored before; a hash is anchored once.');
          }
          if (res.status !== 200) throw new Error(problem(res));
          d.last = body.chain_hash;
          d.next = body.chain_index + 1;
          return saveDevice(d).then(function () {
            var b = res.body;
            result([
              el('h3', { tabindex: '-1', id: 'result-heading', text: 'Anchored' }),
              facts([
                ['File', h.name], ['SHA-256', el('code', { text: h.hex })], ['Anchored at', when(b.anchored_at)], ['Chain position', String(body.chain_index)],
                ['Ledger transaction', el('a', { href: b.ledgerscan_url, text: b.tx_hash })], ['Confirmed on the ledger', b.blockchain_anchored ? 'yes' : 'not yet (it completes shortly)'],
              ]),
              el('p', {}, [link('/verify/' + h.hex, 'Open the verification page'), ' · ', link('/api/v2/evidence/receipt/' + h.hex, 'Receipt (JSON)'), ' · ', certificateButton(h.hex, key)]),
            ]);
            say('file-message', 'Anchored: signed, time-stamped and sent to the ledger.', 'ok');
          });
        });
      });
    });
  }
  function renderActions() {
    var features = (state.info && state.info.features) || [];
    var starter = features.indexOf('timestamp') >= 0, pro = features.indexOf('anchor') >= 0;
    show($('timestamp-button'), starter);
    show($('sign-button'), features.indexOf('ed25519_signing') >= 0);
    show($('anchor-button'), pro);
    show($('device'), pro);
    $('tier-note').textContent = pro ? '' : starter ? 'Anchoring a file (signature, timestamp and ledger transaction) needs the Pro tier.'
      : 'Your tier registers hashes through the API. Time-stamping and signing files need Starter; anchoring needs Pro.';
    if (pro) device().then(renderDevice, function (e) { $('tier-note').textContent = 'This browser cannot keep an Ed25519 device key (' + e.message + '), so it cannot anchor files.'; show($('anchor-button'), false); });
  }

  // ---------------------------------------------------------------- recent evidence
  function loadEvidence() {
    return accountCall('GET', '/api/v2/account/evidence?limit=10', undefined, refresh).then(function (res) {
      if (res.status !== 200) { say('evidence-message', problem(res), 'bad'); return; }
      var items = res.body.items.map(function (it) {
        var parts = [el('code', { text: it.image_hash.slice(0, 16) + '…' }), ' ' + it.proofs.join(', ') + ' · ' + when(it.at) + ' · '];
        parts.push(link('/verify/' + it.image_hash, 'verify'));
        if (it.proofs.indexOf('anchored') >= 0) parts.push(' · ', link('/api/v2/evidence/receipt/' + it.image_hash, 'receipt'));
        return el('li', {}, parts);
      });
      $('evidence-list').replaceChildren.apply($('evidence-list'), items);
      show($('evidence-empty'), items.length === 0);
    });
  }

  // ---------------------------------------------------------------- wiring
  $('auth-form').addEventListener('submit', function (event) {
    event.preventDefault();
    authenticate(event.submitter && event.submitter.id === 'register-button' ? 'register' : 'login');
  });
  $('logout-button').addEventListener('click', logOut);
  $('key-form').addEventListener('submit', function (event) { event.preventDefault(); createKey(); });
  $('copy-key').addEventListener('click', function () {
    var key = $('new-key').textContent;
    var done = function (ok) { say('copy-message', ok ? 'Copied.' : 'Select the key and copy it by hand.', ok ? 'ok' : 'bad'); };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(key).then(function () { done(true); }, function () { done(false); });
    else done(false);
  });
  $('refresh-button').addEventListener('click', function () { refresh(); });
  $('file-form').addEventListener('submit', function (event) { event.preventDefault(); });
  ['timestamp', 'sign', 'anchor'].forEach(function (kind) {
    $(kind + '-button').addEventListener('click', function () { var b = $(kind + '-button'); fileAction(kind, b); });
  });
  $('api-key').value = store.getItem(KEY) || '';
  $('api-key').addEventListener('change', function () { var v = $('api-key').value.trim(); if (v) store.setItem(KEY, v); else store.removeItem(KEY); });

  var token = store.getItem(TOKEN);
  if (token && tokenExpiry(token) > Date.now()) {
    startSession(token, store.getItem(EMAIL) || '');
    show($('signed-out'), false);
    show($('account'), true);
    refresh();
  } else {
    if (token) expired(null);
    else { show($('signed-out'), true); show($('account'), false); }
  }
})();
`;
