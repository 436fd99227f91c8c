/**
 * The dashboard's Webhooks panel (docs/webhooks.md "The endpoints"; browser code: see app.ts for
 * how it is built). Like the API keys, it calls the JWT endpoints through app.ts's `accountCall`
 * (a 401 asks for the password in place and runs the interrupted action again):
 * - lists the account's endpoints (URL, events, status and why disabled, created);
 * - adds one, showing its signing secret once, as a new API key is shown;
 * - deletes one, after a confirmation;
 * - lists an endpoint's recent deliveries (event, each attempt's time and status, the next
 *   attempt) and sends one again (POST …/deliveries/{delivery_id}/retry).
 */
import { problem, type ApiResult } from './api.js';
import { $, busy, confirmInPlace, el, input, say, show, when } from './dom.js';

/** app.ts's account call: the session's JWT; a 401 asks for the password and runs `again` after it. */
export type AccountCall = (method: string, path: string, json: unknown, again: () => unknown) => Promise<ApiResult>;

export interface WebhookEndpoint {
  webhook_id: string;
  url: string;
  events: string[];
  status: 'active' | 'disabled';
  disabled_reason: 'gone' | 'failing' | null;
  disabled_at: string | null;
  created_at: string;
}
interface NewWebhookEndpoint extends WebhookEndpoint {
  secret: string;
}
export interface WebhookDelivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  created_at: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: { at: string; status: number; error?: string }[];
  next_attempt_at: string | null;
  failed_reason: string | null;
}

const HOOKS = '/api/v2/account/webhooks';
/** The event types, in the order of the form's checkboxes. */
const EVENTS = ['evidence.anchored', 'evidence.final', 'evidence.record'];
const REASONS: Record<string, string> = {
  gone: 'it answered 410 Gone',
  failing: 'every attempt failed for 5 days',
};

const hookPath = (webhookId: string) => HOOKS + '/' + encodeURIComponent(webhookId);

/** The endpoint's status as a person reads it: "active", or "disabled" with why and when. */
export function statusText(e: WebhookEndpoint): string {
  if (e.status === 'active') return 'active';
  const why = e.disabled_reason ? REASONS[e.disabled_reason] || e.disabled_reason : '';
  return 'disabled' + (e.disabled_at ? ' ' + when(e.disabled_at) : '') + (why ? ': ' + why : '');
}

/** One attempt as "time — status" (0: no answer, with why). */
function attemptText(a: WebhookDelivery['attempts'][number]): string {
  return when(a.at) + ' — ' + (a.status === 0 ? 'no answer' + (a.error ? ' (' + a.error + ')' : '') : String(a.status));
}

export interface WebhookPanel {
  /** Reloads the endpoints (and the open endpoint's deliveries); `again` runs after a re-login (default: this load). */
  load(again?: () => unknown): Promise<void>;
  /** Forgets what the panel showed (logging out). */
  reset(): void;
}

/** Wires the panel's elements (lib/web/dashboard-webhooks-view.tsx) and returns its loader. */
export function webhookPanel(accountCall: AccountCall): WebhookPanel {
  let open: WebhookEndpoint | null = null;

  async function load(again?: () => unknown): Promise<void> {
    const res = await accountCall('GET', HOOKS, undefined, again ?? load);
    if (res.status !== 200) {
      say('webhooks-message', problem(res), 'bad');
      return;
    }
    const endpoints = (res.body as { webhooks: WebhookEndpoint[] }).webhooks;
    $('webhooks-body').replaceChildren(...endpoints.map(row));
    show($('webhooks-empty'), endpoints.length === 0);
    if (open) {
      const still = endpoints.find((e) => e.webhook_id === open?.webhook_id);
      if (still) await loadDeliveries(still);
      else closeDeliveries();
    }
  }

  function row(e: WebhookEndpoint): HTMLTableRowElement {
    const actions = el('td', { class: 'actions' });
    const deliveries = el('button', { type: 'button', 'aria-label': 'Deliveries to ' + e.url, text: 'Deliveries' });
    deliveries.addEventListener('click', () => {
      void loadDeliveries(e).then(() => $('deliveries-heading').focus(), () => undefined);
    });
    const remove = el('button', { type: 'button', 'aria-label': 'Delete endpoint ' + e.url, text: 'Delete' });
    remove.addEventListener('click', () => confirmDelete(e, actions, remove));
    actions.append(deliveries, ' ', remove);
    // data-label names each cell where a narrow screen shows the rows as cards (assets.ts).
    return el('tr', {}, [
      el('td', { 'data-label': 'URL', class: 'url' }, [el('code', { text: e.url })]),
      el('td', { 'data-label': 'Events', class: 'events' }, e.events.map((type) => el('span', { text: type }))),
      el('td', { 'data-label': 'Status', class: e.status === 'active' ? 'status' : 'status bad-text', text: statusText(e) }),
      el('td', { 'data-label': 'Created', text: when(e.created_at) }),
      actions,
    ]);
  }

  function confirmDelete(e: WebhookEndpoint, cell: HTMLElement, remove: HTMLButtonElement): void {
    const ask = { label: 'Confirm deletion', question: 'Delete this endpoint? Nothing more is sent to it, and its pending deliveries fail.', yes: 'Yes, delete' };
    confirmInPlace(cell, remove, ask, async function run(yes): Promise<void> {
      const res = await accountCall('DELETE', hookPath(e.webhook_id), undefined, () => run(yes));
      if (res.status !== 200) {
        say('webhooks-message', problem(res), 'bad');
        busy(yes, false);
        return;
      }
      say('webhooks-message', 'The endpoint ' + e.url + ' is deleted.', 'ok');
      if (open && open.webhook_id === e.webhook_id) closeDeliveries();
      await load();
      $('webhooks-heading').focus();
    });
  }

  function create(): void {
    const add = $('create-webhook-button', HTMLButtonElement);
    const url = input('webhook-url').value.trim();
    const boxes = [input('webhook-event-anchored'), input('webhook-event-final'), input('webhook-event-record')];
    const events = EVENTS.filter((_type, i) => boxes[i]?.checked);
    if (!url || events.length === 0) {
      say('webhooks-message', url ? 'Choose at least one event.' : 'Enter the URL the events are sent to.', 'bad');
      input('webhook-url').focus();
      return;
    }
    busy(add, true);
    const run = async (): Promise<void> => {
      const res = await accountCall('POST', HOOKS, { url, events }, run);
      busy(add, false);
      if (res.status !== 200) {
        say('webhooks-message', problem(res), 'bad');
        return;
      }
      const made = res.body as NewWebhookEndpoint;
      input('webhook-url').value = '';
      say('webhooks-message', '');
      $('new-webhook-title').textContent = 'The signing secret of ' + made.url;
      $('new-webhook-secret').textContent = made.secret;
      say('copy-webhook-message', '');
      show($('new-webhook-box'), true);
      await load();
      $('new-webhook-title').focus();
    };
    run().catch(() => busy(add, false));
  }

  async function loadDeliveries(e: WebhookEndpoint): Promise<void> {
    const again = () => loadDeliveries(e);
    const res = await accountCall('GET', hookPath(e.webhook_id) + '/deliveries', undefined, again);
    open = e;
    $('deliveries-heading').textContent = 'Deliveries to ' + e.url;
    show($('deliveries'), true);
    if (res.status !== 200) {
      say('deliveries-message', problem(res), 'bad');
      return;
    }
    const list = (res.body as { deliveries: WebhookDelivery[] }).deliveries;
    $('deliveries-body').replaceChildren(...list.map((d) => deliveryRow(e, d)));
    show($('deliveries-empty'), list.length === 0);
  }

  function deliveryRow(e: WebhookEndpoint, d: WebhookDelivery): HTMLTableRowElement {
    const attempts = d.attempts.length === 0 ? el('span', { class: 'muted', text: 'none yet' }) : el('ol', { class: 'attempts' }, d.attempts.map((a) => el('li', { text: attemptText(a) })));
    const state = d.state === 'failed' ? 'failed' + (d.failed_reason ? ': ' + d.failed_reason : '') : d.state;
    const actions = el('td', { class: 'actions' });
    if (e.status === 'active') {
      const again = el('button', { type: 'button', 'aria-label': 'Send ' + d.event_type + ' ' + d.event_id + ' again', text: 'Send again' });
      again.addEventListener('click', () => retry(e, d, again));
      actions.appendChild(again);
    }
    return el('tr', {}, [
      el('td', { 'data-label': 'Event', class: 'event' }, [d.event_type, el('br'), el('code', { text: d.event_id })]),
      el('td', { 'data-label': 'State', text: state }),
      el('td', { 'data-label': 'Attempts', class: 'attempts' }, [attempts]),
      el('td', { 'data-label': 'Next attempt', text: d.next_attempt_at ? when(d.next_attempt_at) : '—' }),
      actions,
    ]);
  }

  function retry(e: WebhookEndpoint, d: WebhookDelivery, again: HTMLButtonElement): void {
    busy(again, true);
    const run = async (): Promise<void> => {
      const res = await accountCall('POST', hookPath(e.webhook_id) + '/deliveries/' + encodeURIComponent(d.delivery_id) + '/retry', undefined, run);
      busy(again, false);
      if (res.status !== 200) {
        say('deliveries-message', problem(res), 'bad');
        return;
      }
      say('deliveries-message', 'Sent again: ' + d.event_type + ' ' + d.event_id + ' is due now, with the same webhook-id.', 'ok');
      await loadDeliveries(e);
    };
    run().catch(() => busy(again, false));
  }

  function closeDeliveries(): void {
    open = null;
    show($('deliveries'), false);
    $('deliveries-body').replaceChildren();
    say('deliveries-message', '');
  }

  $('webhook-form').addEventListener('submit', (event) => {
    event.preventDefault();
    create();
  });
  $('copy-webhook-secret').addEventListener('click', () => {
    const secret = $('new-webhook-secret').textContent ?? '';
    const done = (ok: boolean) => say('copy-webhook-message', ok ? 'Copied.' : 'Select the secret and copy it by hand.', ok ? 'ok' : 'bad');
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(secret).then(() => done(true), () => done(false));
    else done(false);
  });
  $('deliveries-refresh').addEventListener('click', () => {
    if (open) void loadDeliveries(open).catch(() => undefined);
  });
  $('deliveries-close').addEventListener('click', () => {
    closeDeliveries();
    $('webhooks-heading').focus();
  });

  return {
    load,
    reset() {
      closeDeliveries();
      show($('new-webhook-box'), false);
      $('new-webhook-secret').textContent = '';
      $('webhooks-body').replaceChildren();
      say('webhooks-message', '');
    },
  };
}
