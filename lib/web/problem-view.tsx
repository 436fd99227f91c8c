/** The page at a problem's `type` URL (RFC 9457 §3.1.1): what the problem type means and what to do. */
import type { FC } from 'hono/jsx';
import type { ProblemType } from '../http/problem-types.js';
import { Page } from './layout.js';

export const ProblemTypePage: FC<{ code: string; title: string; type: ProblemType }> = ({ code, title, type }) => (
  <Page title={`${title} — API problem ${code}`} description={type.meaning}>
    <h1>{title}</h1>
    <p class="muted">
      Problem type <code>{code}</code>, answered with HTTP status {type.status}. Every error of the API is a problem+json document (RFC 9457)
      whose <code>code</code> is <code>{code}</code> and whose <code>type</code> is this page.
    </p>
    <h2>What it means</h2>
    <p>{type.meaning}</p>
    <h2>What to do</h2>
    <p>{type.remedy}</p>
    <p>
      The <code>detail</code> member says what went wrong in the request at hand, <code>instance</code> the path it was sent to, and{' '}
      <code>request_id</code> identifies it in the service log: quote it when you report a problem. The whole API is described at{' '}
      <a href="/api/openapi.json">/api/openapi.json</a>.
    </p>
  </Page>
);
