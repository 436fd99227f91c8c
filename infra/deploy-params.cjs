'use strict';
/**
 * The deployment parameters a stage needs before AWS can run it (docs/decisions.md "Deploying"),
 * each named as the `--param` that sets it, and the one rule that judges them. Used twice:
 *  - by `osls package` (infra/serverless-resources.cjs), which refuses a stage other than dev
 *    whose parameters are placeholders, missing or malformed, before anything is bundled;
 *  - by `npm run check:template` (infra/check-template.ts), on the resolved configuration the
 *    package recorded (.serverless/serverless-state.json) and on the key files inside each
 *    function's zip, so a package made any other way is judged by the same rule.
 * Every problem starts with the parameter's name, so the operator knows which `--param` to pass.
 *
 * On dev the same findings are notes: dev packages offline with placeholder KMS keys, no key
 * files and no edge (docs/decisions.md "Deploying").
 */

const { X509Certificate } = require('node:crypto');

/** The stage that may package with placeholders (CI, `osls package` with no parameters). */
const PLACEHOLDER_STAGES = new Set(['dev']);
const ZERO_ACCOUNT = '000000000000';

/**
 * Every parameter, where its resolved value lives in the osls configuration (`path`, the same for
 * `resolveVariable('self:' + path)` and for serverless-state.json's `service`) and what it must be.
 * `edge: true`: needed only with the edge on (always on stages other than dev).
 * `optional: true`: may be left unset; when set it must be well formed.
 */
const PARAMETERS = [
  { param: 'pqSignerKmsKeyArn', path: 'custom.kms.pqSignerKeyArn', kind: 'kmsKeyArn' },
  { param: 'tsaKmsKeyArn', path: 'custom.kms.tsaKeyArn', kind: 'kmsKeyArn' },
  { param: 'ledgerKmsKeyArn', path: 'custom.kms.ledgerWalletKeyArn', kind: 'kmsKeyArn' },
  { param: 'jwtSecretKmsKeyArn', path: 'custom.kms.jwtSecretKeyArn', kind: 'kmsKeyArn' },
  { param: 'ed25519SignerKmsKeyArn', path: 'custom.kms.ed25519SignerKeyArn', kind: 'kmsKeyArn' },
  { param: 'pdfSignerKmsKeyArn', path: 'custom.kms.pdfSignerKeyArn', kind: 'kmsKeyArn' },
  { param: 'webhookSecretsKmsKeyArn', path: 'custom.kms.webhookSecretsKeyArn', kind: 'kmsKeyArn' },
  // The post-quantum TSA: required like the classic one (docs/decisions.md "Post-quantum time").
  { param: 'tsaPqKmsKeyArn', path: 'custom.kms.tsaPqKeyArn', kind: 'kmsKeyArn' },
  { param: 'jwtSecretKmsCiphertext', path: 'provider.environment.JWT_SECRET_KMS_CIPHERTEXT', kind: 'kmsCiphertext' },
  { param: 'tsaCertFile', path: 'provider.environment.TSA_CERT_FILE', kind: 'certificateFile' },
  { param: 'tsaRootFile', path: 'provider.environment.TSA_ROOT_FILE', kind: 'certificateFile' },
  { param: 'tsaPqCertFile', path: 'provider.environment.TSA_PQ_CERT_FILE', kind: 'mlDsa65CertificateFile' },
  { param: 'tsaPqRootFile', path: 'provider.environment.TSA_PQ_ROOT_FILE', kind: 'mlDsa65CertificateFile' },
  // The TSA history (lib/crypto/tsa/history.ts): absent means nothing retired; present, it must be
  // one the functions can read, or every function that builds the TSA would fail at start.
  { param: 'tsaHistoryFile', path: 'provider.environment.TSA_HISTORY_FILE', kind: 'tsaHistoryFile', absentFileOk: true },
  { param: 'pdfSignerCertFile', path: 'provider.environment.PDF_SIGNER_CERT_FILE', kind: 'certificateFile' },
  { param: 'pqPublicKeyFile', path: 'provider.environment.PQ_PUBLIC_KEY_FILE', kind: 'mlDsa65PublicKeyFile' },
  { param: 'edgeWebAclArn', path: 'custom.edge.webAclArn', kind: 'webAclArn', edge: true },
  { param: 'edgeOriginSecret', path: 'custom.edge.originSecret', kind: 'secret', edge: true },
  { param: 'edgeOriginDomain', path: 'custom.edge.originDomain', kind: 'hostname', edge: true },
  { param: 'edgeOriginCertificateArn', path: 'custom.edge.originCertificateArn', kind: 'acmCertificateArn', edge: true },
  { param: 'edgeOriginClientCertificateArn', path: 'custom.edge.originClientCertificateArn', kind: 'acmClientCertificateArn', edge: true },
  { param: 'edgeOriginTruststoreUri', path: 'custom.edge.originTruststoreUri', kind: 's3Uri', edge: true },
  { param: 'edgeOriginTruststoreVersion', path: 'custom.edge.originTruststoreVersion', kind: 's3ObjectVersion', edge: true, optional: true },
  { param: 'edgeOriginHostedZoneId', path: 'custom.edge.originHostedZoneId', kind: 'hostedZoneId', edge: true, optional: true },
];

/** ML-DSA-65 public key: the raw 1952 bytes (FIPS 204), as docs/runbook.md step 3 exports it. */
const ML_DSA_65_PUBLIC_KEY_BYTES = 1952;
/**
 * The SubjectPublicKeyInfo of an ML-DSA-65 key as RFC 9881 writes it: SEQUENCE { SEQUENCE { OID
 * 2.16.840.1.101.3.4.3.18 } (no parameters), BIT STRING of the 1952-byte key }. Found in a
 * certificate's DER on any Node; Node 24 (OpenSSL 3.5) also names the key type `ml-dsa-65`.
 */
const ML_DSA_65_SPKI_PREFIX = Buffer.from('308207b2300b0609608648016503040312038207a100', 'hex');
/** The JWT secret is at least 32 bytes; a KMS ciphertext carries it plus at least IV, tag and key reference. */
const MIN_CIPHERTEXT_BYTES = 32 + 12 + 16;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const isPlaceholder = (v) => /placeholder/i.test(v) || v.includes(`:${ZERO_ACCOUNT}:`);

/** Problems of one string value of the given kind (empty: fine). `region`: the stack's region. */
function valueProblems(kind, value, region) {
  if (value === undefined || value === null || value === '') return ['not set'];
  if (typeof value !== 'string') return [`not a string (${JSON.stringify(value)})`];
  if (isPlaceholder(value)) return [`still the placeholder "${value}"`];
  switch (kind) {
    case 'kmsKeyArn': {
      const m = new RegExp(`^arn:aws[a-z-]*:kms:([a-z0-9-]+):(\\d{12}):key/(${UUID}|mrk-[0-9a-f]{32})$`).exec(value);
      if (!m) return [`"${value}" is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>; IAM cannot scope kms:Sign to an alias)`];
      if (region && m[1] !== region) return [`"${value}" is a key in ${m[1]}; the functions run in ${region} and call KMS there`];
      return [];
    }
    case 'kmsCiphertext': {
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return ['not base64 (the CiphertextBlob of `aws kms encrypt`, docs/runbook.md step 3)'];
      const bytes = Buffer.from(value, 'base64').length;
      if (bytes < MIN_CIPHERTEXT_BYTES) return [`${bytes} bytes: too short to be the KMS ciphertext of a 32-byte secret`];
      return [];
    }
    case 'webAclArn':
      if (!new RegExp(`^arn:aws:wafv2:us-east-1:\\d{12}:global/webacl/[A-Za-z0-9_-]+/${UUID}$`).test(value)) {
        return [`"${value}" is not a CLOUDFRONT WebACL ARN (arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>, the output of the edge stack)`];
      }
      return [];
    case 'acmCertificateArn': {
      const m = new RegExp(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):(\\d{12}):certificate/${UUID}$`).exec(value);
      if (!m) return [`"${value}" is not an ACM certificate ARN`];
      if (region && m[1] !== region) return [`"${value}" is in ${m[1]}: a regional API Gateway domain needs its certificate in ${region}`];
      return [];
    }
    case 'acmClientCertificateArn': {
      // The certificate CloudFront presents to the origin (origin mTLS): CloudFront reads it from
      // ACM in us-east-1 only, whatever the stack's region.
      const m = new RegExp(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):(\\d{12}):certificate/${UUID}$`).exec(value);
      if (!m) return [`"${value}" is not an ACM certificate ARN`];
      if (m[1] !== 'us-east-1') return [`"${value}" is in ${m[1]}: CloudFront takes the client certificate it presents to the origin from ACM in us-east-1`];
      return [];
    }
    case 's3Uri':
      // The origin's mTLS truststore: the PEM of the CA that issued the client certificate.
      return /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\/.+$/.test(value) ? [] : [`"${value}" is not an S3 URI (s3://<bucket>/<key> of the truststore PEM)`];
    case 's3ObjectVersion':
      return /^[A-Za-z0-9._-]{1,1024}$/.test(value) ? [] : [`"${value}" is not an S3 object version id`];
    case 'hostname':
      if (!/^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(value)) return [`"${value}" is not a DNS name`];
      if (/\.(amazonaws\.com|cloudfront\.net)$/.test(value)) return [`"${value}" is an AWS name: the origin needs a name of your own (a custom domain of the API)`];
      return [];
    case 'hostedZoneId':
      return /^Z[A-Z0-9]{1,32}$/.test(value) ? [] : [`"${value}" is not a Route 53 hosted zone id`];
    case 'secret':
      return value.length >= 32 ? [] : [`${value.length} characters; at least 32 are required`];
    case 'certificateFile':
    case 'mlDsa65CertificateFile':
    case 'mlDsa65PublicKeyFile':
    case 'tsaHistoryFile':
      return [];
    default:
      throw new Error(`unknown parameter kind ${kind}`);
  }
}

/**
 * Problems of a TSA history file (the shape readTsaHistory in lib/crypto/tsa/history.ts accepts:
 * `{"version": 1, "retired": [...]}`, each entry a classic or pq root or leaf, its PEM a
 * certificate, its retired_at a time).
 */
function tsaHistoryProblems(content) {
  let parsed;
  try {
    parsed = JSON.parse(content.toString('utf8'));
  } catch {
    return ['not JSON (a TSA history is {"version": 1, "retired": [...]}, written by npm run admin -- record-tsa-retirement)'];
  }
  if (!parsed || parsed.version !== 1 || !Array.isArray(parsed.retired)) return ['not a TSA history ({"version": 1, "retired": [...]})'];
  const problems = [];
  parsed.retired.forEach((e, i) => {
    if (!e || (e.kind !== 'classic' && e.kind !== 'pq') || (e.role !== 'root' && e.role !== 'leaf')) problems.push(`retired[${i}] is not a classic or pq root or leaf`);
    else if (typeof e.retired_at !== 'string' || Number.isNaN(Date.parse(e.retired_at))) problems.push(`retired[${i}] has no retired_at time`);
    else {
      try {
        new X509Certificate(String(e.pem));
      } catch {
        problems.push(`retired[${i}].pem is not a PEM certificate`);
      }
    }
  });
  return problems;
}

/** Problems of a key file's content (a Buffer), by kind. */
function fileContentProblems(kind, content) {
  if (kind === 'tsaHistoryFile') return tsaHistoryProblems(content);
  if (kind === 'mlDsa65PublicKeyFile') {
    return content.length === ML_DSA_65_PUBLIC_KEY_BYTES ? [] : [`${content.length} bytes, not the ${ML_DSA_65_PUBLIC_KEY_BYTES} of a raw ML-DSA-65 public key`];
  }
  let cert;
  try {
    cert = new X509Certificate(content);
  } catch {
    return ['not a PEM certificate'];
  }
  if (kind === 'mlDsa65CertificateFile') {
    let type;
    try {
      type = cert.publicKey.asymmetricKeyType;
    } catch {
      // A Node without ML-DSA cannot make a key of it: judge the SubjectPublicKeyInfo's bytes.
      type = cert.raw.includes(ML_DSA_65_SPKI_PREFIX) ? 'ml-dsa-65' : 'unreadable';
    }
    if (type !== 'ml-dsa-65') return [`its key is ${type}, not ML-DSA-65 (the post-quantum TSA's chain is ML-DSA-65 end to end, RFC 9881)`];
  }
  return [];
}

const isFileKind = (kind) => kind === 'certificateFile' || kind === 'mlDsa65CertificateFile' || kind === 'mlDsa65PublicKeyFile' || kind === 'tsaHistoryFile';

/**
 * Every problem of a stage's parameters, one line each, starting with the parameter's name.
 *  - get(path): the resolved value at an osls configuration path (see PARAMETERS);
 *  - readFile(relativePath): the file as the functions will see it (a Buffer), or undefined when
 *    it is absent (on disk at package time; inside the zips for the template check);
 *  - edge: whether the edge is on; keysDir: the folder `package.patterns` ships; region.
 */
async function parameterProblems({ get, readFile, edge, keysDir, region }) {
  const problems = [];
  for (const p of PARAMETERS) {
    if (p.edge && !edge) continue;
    const value = await get(p.path);
    if (p.optional && (value === undefined || value === '')) continue;
    const found = valueProblems(p.kind, value, region);
    if (found.length === 0 && isFileKind(p.kind)) {
      const file = String(value).replace(/^\.\//, '');
      if (file.startsWith('/') || file.includes('..')) found.push(`"${value}" is not a path inside the package (relative to the service folder)`);
      else if (keysDir && !file.startsWith(`${keysDir.replace(/\/+$/, '')}/`)) found.push(`"${value}" is outside ${keysDir}/, the only folder the package ships (package.patterns)`);
      else {
        const content = await readFile(file);
        if (content === undefined) {
          if (!p.absentFileOk) found.push(`${value} is missing (docs/runbook.md step 3 creates it)`);
        }
        else found.push(...fileContentProblems(p.kind, content).map((x) => `${value}: ${x}`));
      }
    }
    for (const f of found) problems.push(`${p.param}: ${f}`);
  }
  return problems;
}

module.exports = { PARAMETERS, PLACEHOLDER_STAGES, parameterProblems, valueProblems, fileContentProblems, isPlaceholder };
