/**
 * The dashboard's Webhooks section (docs/webhooks.md): the fixed shell that the browser app's
 * panel (lib/web/dashboard/webhooks.ts) fills from the JWT webhook endpoints. Every id the panel
 * looks up is an element here.
 */
import type { FC } from 'hono/jsx';

const EVENTS = [
  ['anchored', 'evidence.anchored', 'anchored (the anchor was recorded)'],
  ['final', 'evidence.final', 'final (the ledger’s final receipt)'],
  ['record', 'evidence.record', 'record (the RFC 4998 evidence record is ready)'],
] as const;

export const WebhooksSection: FC = () => (
  <section aria-labelledby="webhooks-heading">
    <h2 id="webhooks-heading" tabindex={-1}>
      Webhooks
    </h2>
    <p class="muted">
      Instead of polling, the service POSTs each event to your endpoint, signed as <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> says;
      deduplicate by the <code>webhook-id</code> header. An account holds up to 5 endpoints. The <a href="/docs">API reference</a> (“v2 webhooks”) has the endpoints and the events.
    </p>
    <form id="webhook-form" class="panel" method="post" action="#" novalidate>
      <label for="webhook-url">Endpoint URL</label>
      <input id="webhook-url" name="url" type="url" inputmode="url" autocomplete="off" spellcheck={false} placeholder="https://claims.example.com/hooks/evidence" />
      <fieldset class="events">
        <legend>Events</legend>
        {EVENTS.map(([id, type, label]) => (
          <label>
            <input id={`webhook-event-${id}`} name="events" type="checkbox" value={type} checked /> {label}
          </label>
        ))}
      </fieldset>
      <p class="buttons">
        <button id="create-webhook-button" type="submit" class="primary">
          Add endpoint
        </button>
      </p>
    </form>
    <div id="new-webhook-box" class="new-key" hidden>
      <h3 id="new-webhook-title" tabindex={-1}></h3>
      <p>
        <strong>Copy it now: it is shown only once.</strong> Give it to your receiver’s Standard Webhooks library to check the{' '}
        <code>webhook-signature</code> header.
      </p>
      <p>
        <code id="new-webhook-secret"></code>
      </p>
      <p>
        <button id="copy-webhook-secret" type="button">
          Copy secret
        </button>{' '}
        <span id="copy-webhook-message" class="message" role="status" aria-live="polite"></span>
      </p>
    </div>
    <p id="webhooks-message" class="message" role="status" aria-live="polite"></p>
    <div class="table-scroll">
      <table class="keys">
        <caption class="visually-hidden">Your webhook endpoints</caption>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody id="webhooks-body"></tbody>
      </table>
    </div>
    <p id="webhooks-empty" class="muted" hidden>
      No endpoints yet.
    </p>

    <div id="deliveries" class="deliveries" hidden>
      <h3 id="deliveries-heading" tabindex={-1}></h3>
      <p class="muted">The newest 50. A delivery is tried again at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; “Send again” makes it due now.</p>
      <p class="buttons">
        <button id="deliveries-refresh" type="button">
          Refresh deliveries
        </button>
        <button id="deliveries-close" type="button">
          Close
        </button>
      </p>
      <p id="deliveries-message" class="message" role="status" aria-live="polite"></p>
      <div class="table-scroll">
        <table class="keys">
          <caption class="visually-hidden">Recent deliveries</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">State</th>
              <th scope="col">Attempts (time — status)</th>
              <th scope="col">Next attempt</th>
              <th scope="col">
                <span class="visually-hidden">Action</span>
              </th>
            </tr>
          </thead>
          <tbody id="deliveries-body"></tbody>
        </table>
      </div>
      <p id="deliveries-empty" class="muted" hidden>
        No deliveries yet: they appear when an event of a subscribed type happens.
      </p>
    </div>
  </section>
);
