import { handle } from 'hono/aws-lambda';
import { getConfig } from '../lib/deps/core.js';
import { createApp } from '../lib/http/app.js';
import { buildOpenApiDocument } from '../lib/http/openapi.js';
import { app as v2EvidenceHash } from './v2/evidence-hash.js';
import { app as v2EvidenceAnchor } from './v2/evidence-anchor.js';
import { app as v2EvidenceFull } from './v2/evidence-full.js';
import { app as v2EvidenceVerify } from './v2/evidence-verify.js';
import { app as v2EvidenceReceipt } from './v2/evidence-receipt.js';
import { app as v2EvidenceTimestamp } from './v2/evidence-timestamp.js';
import { app as v2Tsa } from './v2/tsa.js';
import { app as v2TsaCertificates } from './v2/tsa-certificates.js';
import { app as v2EvidenceSign } from './v2/evidence-sign.js';
import { certificateRouteDocumentation } from '../lib/http/routes/evidence-certificate.js';
import { docsAssetsRouteDocumentation } from '../lib/http/routes/docs-assets.js';
import { app as v2AccountRegister } from './v2/account-register.js';
import { app as v2AccountLogin } from './v2/account-login.js';
import { app as v2AccountKeysCreate } from './v2/account-keys-create.js';
import { app as v2AccountKeysList } from './v2/account-keys-list.js';
import { app as v2AccountKeysDelete } from './v2/account-keys-delete.js';
import { app as v2AccountUsage } from './v2/account-usage.js';
import { app as v2AccountInfo } from './v2/account-info.js';
import { app as v2AccountEvidence } from './v2/account-evidence.js';
import { app as v2AdminSetTier } from './v2/admin-set-tier.js';
import { app as v1ChainAnchor } from './v1/chain-anchor.js';
import { app as v1ChainVerify } from './v1/chain-verify.js';
import { app as v1Timestamp } from './v1/timestamp.js';
import { app as v1ChainAll } from './v1/chain-all.js';
import { app as v1PqInfo } from './v1/pq-info.js';
import { app as v1PqVerify } from './v1/pq-verify.js';
import { app as v1PqRegistration } from './v1/pq-registration.js';
import { app as v1LedgerStatus } from './v1/ledger-status.js';
import { app as v1LedgerVerify } from './v1/ledger-verify.js';
import { app as v1Stats } from './v1/stats.js';
import { app as v1Health } from './v1/health.js';
import { app as wellKnownJwks } from './web/jwks.js';
import { app as wellKnownTrust } from './web/trust-anchors.js';
import { app as ledgerTxPage } from './web/ledger-tx.js';
import { app as verifyPage } from './web/verify-page.js';
import { app as landingPage } from './web/landing-page.js';
import { app as dashboardPage } from './web/dashboard-page.js';
import { app as docsPage } from './web/docs-page.js';
import { app as problemPage } from './web/problem-page.js';

/** Every documented function, in registry order (test/functions/openapi.test.ts checks it matches infra/functions.json). */
export const DOCUMENTED_APPS = {
  v2EvidenceHash,
  v2EvidenceAnchor,
  v2EvidenceFull,
  v2EvidenceVerify,
  v2EvidenceReceipt,
  v2EvidenceTimestamp,
  v2Tsa,
  v2TsaCertificates,
  v2EvidenceSign,
  // Documented from its route alone: its app would bring pdf-lib and the fonts into this bundle.
  v2EvidenceCertificate: certificateRouteDocumentation(),
  v2AccountRegister,
  v2AccountLogin,
  v2AccountKeysCreate,
  v2AccountKeysList,
  v2AccountKeysDelete,
  v2AccountUsage,
  v2AccountInfo,
  v2AccountEvidence,
  v2AdminSetTier,
  v1ChainAnchor,
  v1ChainVerify,
  v1Timestamp,
  v1ChainAll,
  v1PqInfo,
  v1PqVerify,
  v1PqRegistration,
  v1LedgerStatus,
  v1LedgerVerify,
  v1Stats,
  v1Health,
  wellKnownJwks,
  wellKnownTrust,
  ledgerTxPage,
  landingPage,
  dashboardPage,
  docsPage,
  // Documented from its route alone: its app would bring Swagger UI's files into this bundle.
  docsAssets: docsAssetsRouteDocumentation(),
  problemPage,
  verifyPage,
};

export const app = createApp({ publicCors: true });

let document: ReturnType<typeof buildOpenApiDocument> | undefined;

app.get('/api/openapi.json', (c) => {
  document ??= buildOpenApiDocument(Object.values(DOCUMENTED_APPS), getConfig().publicBaseUrl);
  c.header('Cache-Control', 'public, max-age=300');
  return c.json(document);
});

export const handler = handle(app);
