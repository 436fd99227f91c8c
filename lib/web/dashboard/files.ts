/**
 * The dashboard's file actions (app.ts: the account's tier decides which are shown): the file is
 * hashed here with WebCrypto and never sent; "Time-stamp" and "Sign" send its SHA-256 with the
 * tab's API key, "Anchor" does as a phone app does with this browser's Ed25519 device key
 * (device.ts). Each shows its result and a PDF certificate button.
 */
import { call, KEY, problem, problemOf, store, type AnchorAnswer, type SignAnswer, type TimestampAnswer } from './api.js';
import { anchorBody, hex, loadDevice, putDevice, readChainPosition, type Device, type FileHash } from './device.js';
import { $, busy, el, input, link, messageOf, say, when } from './dom.js';

// ---------------------------------------------------------------- files: hashing and the device key
/** The chosen file's SHA-256, computed here: the file is never sent. */
async function fileHash(): Promise<FileHash> {
  const file = input('file').files?.[0];
  if (!file) throw new Error('Choose a file first.');
  if (!window.crypto || !window.crypto.subtle) throw new Error('This browser cannot hash files here: WebCrypto needs HTTPS.');
  const digest = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
  return { hex: hex(digest), bytes: new Uint8Array(digest), name: file.name };
}
async function saveDevice(d: Device): Promise<Device> {
  await putDevice(d);
  renderDevice(d);
  return d;
}
export function renderDevice(d: Device): void {
  $('device-key').textContent = d.publicHex;
  $('device-next').textContent = String(d.next);
  $('device-chain-link', HTMLAnchorElement).href = '/api/v1/chain/all/' + d.publicHex;
}

// ---------------------------------------------------------------- files: the three actions
export type FileAction = 'timestamp' | 'sign' | 'anchor';

/** The API key of this tab's field (kept for the tab); throws when there is none. */
function apiKey(): string {
  const key = input('api-key').value.trim();
  if (!key) throw new Error('Enter an API key first (create one above; a new key is used here automatically).');
  store.setItem(KEY, key);
  return key;
}
function result(children: Node[]): void {
  $('result').replaceChildren(...children);
}
function certificateButton(hash: string, key: string): HTMLButtonElement {
  const download = el('button', { type: 'button', text: 'Download the PDF certificate' });
  download.addEventListener('click', async () => {
    busy(download, true);
    const res = await call('GET', '/api/v2/evidence/certificate/' + hash, { apiKey: key, binary: true });
    busy(download, false);
    if (res.status !== 200) {
      say('file-message', problem(res), 'bad');
      return;
    }
    const url = URL.createObjectURL(res.body as Blob);
    const a = el('a', { href: url, download: 'evidence-' + hash.slice(0, 16) + '.pdf' });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  });
  return download;
}
function facts(pairs: [string, Node | string][]): HTMLDListElement {
  return el('dl', { class: 'facts' }, pairs.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, [value])]));
}
/** One file action, from the chosen file and the tab's API key; `done` runs once it succeeded (the page shows its result). */
export async function fileAction(kind: FileAction, pressed: HTMLButtonElement, done: () => void): Promise<void> {
  let key: string;
  try {
    key = apiKey();
  } catch (e) {
    say('file-message', messageOf(e), 'bad');
    input('api-key').focus();
    return;
  }
  busy(pressed, true);
  say('file-message', 'Hashing the file in this browser (it is not uploaded)…');
  try {
    const h = await fileHash();
    say('file-message', 'SHA-256 ' + h.hex + ': ' + (kind === 'anchor' ? 'anchoring (signature, timestamp and ledger transaction)…' : kind === 'sign' ? 'signing…' : 'time-stamping…'));
    if (kind === 'anchor') await anchor(h, key, true);
    else await signOrTimestamp(kind, h, key);
  } catch (e) {
    busy(pressed, false);
    say('file-message', messageOf(e), 'bad');
    return;
  }
  busy(pressed, false);
  document.getElementById('result-heading')?.focus();
  done();
}
async function signOrTimestamp(kind: 'sign' | 'timestamp', h: FileHash, key: string): Promise<void> {
  const res = await call('POST', '/api/v2/evidence/' + kind, { apiKey: key, json: { sha256_hash: h.hex } });
  if (res.status !== 200) throw new Error(problem(res));
  let rows: [string, Node | string][];
  let download: HTMLAnchorElement | null = null;
  if (kind === 'sign') {
    const b = res.body as SignAnswer;
    rows = [['File', h.name], ['SHA-256', el('code', { text: h.hex })], ['Signed at', when(b.statement.signed_at)], ['Key', el('code', { text: b.key_id })], ['Signature (Ed25519)', el('code', { text: b.signature })]];
  } else {
    const b = res.body as TimestampAnswer;
    rows = [['File', h.name], ['SHA-256', el('code', { text: h.hex })], ['Time (RFC 3161)', when(b.gen_time)], ['Serial number', el('code', { text: b.serial_number })]];
    download = el('a', { href: 'data:application/timestamp-reply;base64,' + b.timestamp_token, download: h.hex.slice(0, 16) + '.tsr', text: 'Download the token (.tsr)' });
  }
  result([
    el('h3', { tabindex: '-1', id: 'result-heading', text: kind === 'sign' ? 'Signed' : 'Time-stamped' }),
    facts(rows),
    el('p', {}, download ? [download, ' ', certificateButton(h.hex, key)] : [certificateButton(h.hex, key)]),
  ]);
  say('file-message', kind === 'sign' ? 'Signed by the service.' : 'Time-stamped.', 'ok');
}
async function anchor(h: FileHash, key: string, firstTry: boolean): Promise<void> {
  const d = await loadDevice();
  const body = await anchorBody(d, h);
  const res = await call('POST', '/api/v2/evidence/anchor', { apiKey: key, json: body });
  const code = problemOf(res).code;
  if (res.status === 409 && code === 'chain_index_conflict' && firstTry) {
    await saveDevice(await readChainPosition(d));
    return anchor(h, key, false);
  }
  if (res.status === 409 && code === 'hash_already_anchored') {
    result([el('p', {}, ['This file is already anchored: ', link('/verify/' + h.hex, 'open its verification page'), '.'])]);
    throw new Error('This file was anchored before; a hash is anchored once.');
  }
  if (res.status !== 200) throw new Error(problem(res));
  d.last = body.chain_hash;
  d.next = body.chain_index + 1;
  await saveDevice(d);
  const b = res.body as AnchorAnswer;
  result([
    el('h3', { tabindex: '-1', id: 'result-heading', text: 'Anchored' }),
    facts([
      ['File', h.name],
      ['SHA-256', el('code', { text: h.hex })],
      ['Anchored at', when(b.anchored_at)],
      ['Chain position', String(body.chain_index)],
      ['Ledger transaction', el('a', { href: b.ledgerscan_url, text: b.tx_hash })],
      ['Confirmed on the ledger', b.blockchain_anchored ? 'yes' : 'not yet (it completes shortly)'],
    ]),
    el('p', {}, [link('/verify/' + h.hex, 'Open the verification page'), ' · ', link('/api/v2/evidence/receipt/' + h.hex, 'Receipt (JSON)'), ' · ', certificateButton(h.hex, key)]),
  ]);
  say('file-message', 'Anchored: signed, time-stamped and sent to the ledger.', 'ok');
}
