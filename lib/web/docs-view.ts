/**
 * /docs: the OpenAPI document rendered by Swagger UI, every file from this origin. Swagger UI
 * writes style attributes as it renders, which no hash can admit, so this page alone allows
 * inline *styles* ('unsafe-inline' in style-src); scripts stay 'self' only (no inline script at
 * all: the start-up code is a file too), and nothing may be fetched but this origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The start-up script (served as /docs/init.js): render /api/openapi.json into #swagger-ui. */
export const DOCS_INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    validatorUrl: null,
    tryItOutEnabled: false
  });
});
`;

/** The page itself. */
export const DOCS_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="description" content="The API reference of the evidence anchoring service: every operation of API v2 and v1, generated from the OpenAPI document the server validates with.">
<title>API reference — Evidence anchoring service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<nav aria-label="Site" style="font:600 1rem/1.5 system-ui,sans-serif;padding:.75rem 1.25rem;border-bottom:1px solid #c8c8c8;display:flex;flex-wrap:wrap;gap:1rem"><a href="/">Evidence anchoring service</a><a href="/#check-file-heading">Check a file or a hash</a><a href="/api/openapi.json">OpenAPI document (JSON)</a></nav>
<main id="swagger-ui" aria-label="API reference"><noscript>The interactive reference needs JavaScript; the document itself is at <a href="/api/openapi.json">/api/openapi.json</a>.</noscript></main>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
