/**
 * The prod package, twice, as an AWS engineer would try it before a first deploy (run by
 * test/offline/run.ts, `npm run test:offline`; no AWS credentials, no network):
 *  - with serverless.yml's placeholders, `osls package --stage prod` is refused, naming every
 *    parameter that is a placeholder or missing and every missing key file;
 *  - with complete values (well-formed fake ARNs, a fresh random ciphertext and edge secret, the
 *    public key fixtures of test/fixtures/deploy-keys via `keysDir`), it packages, and
 *    `npm run check:template` passes it against the CloudFormation resource specification and
 *    every deployment rule; the template shows the execute-api endpoint disabled behind the edge;
 *  - the same check refuses that package once a value in it is a placeholder or a key file is
 *    not in the zips, by parameter name;
 *  - the edge rule notices each way around it (infra/template-rules.ts checkEdge).
 * Both packages go to temporary folders (`osls package --package <dir>`), never .serverless,
 * which `npm test` and CI's `npm run check:template` use.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { type CfnTemplate, checkEdge } from '../../infra/template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const require = createRequire(import.meta.url);
const { buildEdgeWebAclTemplate, cachedPathPatterns, ALL_VIEWER_EXCEPT_HOST } = require('../../infra/edge-waf.cjs') as typeof import('../../infra/edge-waf.cjs');
const { PARAMETERS } = require('../../infra/deploy-params.cjs') as typeof import('../../infra/deploy-params.cjs');
const OSLS = path.join(ROOT, 'node_modules', '.bin', 'osls');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const REGION = 'eu-central-1';

interface Run {
  code: number;
  output: string;
  ms: number;
}

/** Runs a command in the repository with no AWS credentials; resolves with its exit code and output. */
function run(file: string, args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, AWS_REGION: REGION };
  for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_PROFILE', 'AWS_SESSION_TOKEN']) delete env[k];
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`, ms: performance.now() - started });
    });
  });
}

const account = () => String(100000000000 + Math.floor(Math.random() * 899999999999));
const uuid = () => randomUUID();

/** Complete, well-formed and fake: a fresh account id, key ids, ciphertext and secret each run. */
function completeParams(): Record<string, string> {
  const a = account();
  const kms = (name: string) => [name, `arn:aws:kms:${REGION}:${a}:key/${uuid()}`];
  return {
    // Every KMS key the deployment rule knows, read from it: a key added there is added here.
    ...Object.fromEntries(PARAMETERS.filter((p) => p.kind === 'kmsKeyArn').map((p) => kms(p.param))),
    jwtSecretKmsCiphertext: randomBytes(184).toString('base64'),
    keysDir: 'test/fixtures/deploy-keys',
    edgeWebAclArn: `arn:aws:wafv2:us-east-1:${a}:global/webacl/evidence-prod-edge/${uuid()}`,
    edgeOriginSecret: randomBytes(32).toString('hex'),
    edgeOriginDomain: `o-${randomBytes(4).toString('hex')}.api.example.com`,
    edgeOriginCertificateArn: `arn:aws:acm:${REGION}:${a}:certificate/${uuid()}`,
    edgeOriginClientCertificateArn: `arn:aws:acm:us-east-1:${a}:certificate/${uuid()}`,
    edgeOriginTruststoreUri: `s3://evidence-${a}-origin-truststore/edge/ca.pem`,
    edgeOriginHostedZoneId: `Z${randomBytes(10).toString('hex').toUpperCase()}`,
  };
}
const asArgs = (params: Record<string, string>) => Object.entries(params).map(([k, v]) => `--param=${k}=${v}`);

let tmp: string;
let refused: Run;
let halfEdge: Run;
let packaged: Run;
let complete: Record<string, string>;
let template: CfnTemplate;

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'package-prod-'));
  refused = await run(OSLS, ['package', '--stage', 'prod', '--package', path.join(tmp, 'placeholders')]);
  halfEdge = await run(OSLS, ['package', '--package', path.join(tmp, 'dev-half-edge'), `--param=edgeWebAclArn=arn:aws:wafv2:us-east-1:${account()}:global/webacl/dev-edge/${uuid()}`]);
  complete = completeParams();
  packaged = await run(OSLS, ['package', '--stage', 'prod', '--package', path.join(tmp, 'complete'), ...asArgs(complete)]);
  assert.equal(packaged.code, 0, packaged.output.slice(-4000));
  template = JSON.parse(await readFile(path.join(tmp, 'complete', 'cloudformation-template-update-stack.json'), 'utf8')) as CfnTemplate;
  console.log(`# package: prod with placeholders refused in ${(refused.ms / 1000).toFixed(1)} s, dev with half an edge in ${(halfEdge.ms / 1000).toFixed(1)} s, complete prod packaged in ${(packaged.ms / 1000).toFixed(1)} s`);
});

after(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('osls package --stage prod', () => {
  test('with the placeholders of serverless.yml: refused before anything is bundled, every parameter named', () => {
    assert.notEqual(refused.code, 0);
    assert.doesNotMatch(refused.output, /Service packaged/);
    assert.equal(existsSync(path.join(tmp, 'placeholders', 'cloudformation-template-update-stack.json')), false);
    const required = PARAMETERS.filter((p) => !p.optional && !p.absentFileOk); // the TSA history may be absent: nothing retired
    for (const p of required) assert.match(refused.output, new RegExp(`\\b${p.param}: `), `${p.param} is not named`);
    assert.match(refused.output, /jwtSecretKmsCiphertext: still the placeholder "placeholder-set-jwtSecretKmsCiphertext"/);
    assert.match(refused.output, /tsaCertFile: infra\/keys\/prod\/tsa\.pem is missing/);
    assert.match(refused.output, /pqSignerKmsKeyArn: still the placeholder "arn:aws:kms:eu-central-1:000000000000:/);
    // The post-quantum TSA is required like the classic one (docs/decisions.md "Post-quantum time").
    assert.match(refused.output, /tsaPqKmsKeyArn: still the placeholder "arn:aws:kms:eu-central-1:000000000000:key\/00000000-0000-4000-8000-000000000007"/);
    assert.match(refused.output, /tsaPqCertFile: infra\/keys\/prod\/tsa-pq\.pem is missing/);
    assert.match(refused.output, /tsaPqRootFile: infra\/keys\/prod\/tsa-pq-root\.pem is missing/);
  });

  test('dev with a WebACL but no origin: refused, naming what the edge still needs (and only that)', () => {
    assert.notEqual(halfEdge.code, 0);
    for (const p of ['edgeOriginSecret', 'edgeOriginDomain', 'edgeOriginCertificateArn', 'edgeOriginClientCertificateArn', 'edgeOriginTruststoreUri']) assert.match(halfEdge.output, new RegExp(`\\b${p}: not set`));
    assert.doesNotMatch(halfEdge.output, /\bpqSignerKmsKeyArn:|\bedgeWebAclArn:/);
  });

  test('with complete values: packaged, and npm run check:template passes it (resource specification included)', async () => {
    const checked = await run(TSX, ['infra/check-template.ts', path.join(tmp, 'complete')]);
    assert.equal(checked.code, 0, checked.output);
    assert.match(checked.output, /^ok {3}resource types are known to the CloudFormation spec/m);
    assert.match(checked.output, /^ok {3}properties are known, well-shaped and required ones present/m);
    assert.match(checked.output, /^ok {3}every Ref, GetAtt, Sub and DependsOn target exists/m);
    assert.match(checked.output, /^ok {3}deployment parameters of stage prod/m);
    assert.match(checked.output, /^ok {3}edge: a WAF rate rule in front of every function, execute-api disabled/m);
    assert.match(checked.output, /template checks passed/);
  });

  test('the template: execute-api disabled, the origin is the API custom domain, receipts and verify cached without credentials', () => {
    const r = template.Resources;
    assert.equal(r.HttpApi!.Properties!.DisableExecuteApiEndpoint, true);
    assert.equal(r.EdgeOriginDomainName!.Properties!.DomainName, complete.edgeOriginDomain);
    // Mutual TLS on the origin domain, and CloudFront presenting the client certificate.
    assert.deepEqual(r.EdgeOriginDomainName!.Properties!.MutualTlsAuthentication, { TruststoreUri: complete.edgeOriginTruststoreUri });
    const config = r.EdgeDistribution!.Properties!.DistributionConfig as Record<string, unknown>;
    assert.equal((config.Origins as { DomainName: unknown }[])[0]!.DomainName, complete.edgeOriginDomain);
    assert.deepEqual((config.Origins as { CustomOriginConfig: { OriginMtlsConfig: unknown } }[])[0]!.CustomOriginConfig.OriginMtlsConfig, { ClientCertificateArn: complete.edgeOriginClientCertificateArn });
    assert.equal(config.WebACLId, complete.edgeWebAclArn);
    const cached = (config.CacheBehaviors as { PathPattern: string }[]).map((b) => b.PathPattern);
    assert.ok(cached.includes('/api/v2/evidence/receipt/*') && cached.includes('/api/v2/evidence/verify/*'), cached.join(', '));
    const originHeaders = ((r.EdgePublicOriginRequestPolicy!.Properties!.OriginRequestPolicyConfig as Record<string, Record<string, string[]>>).HeadersConfig!.Headers ?? []).map((h) => h.toLowerCase());
    assert.deepEqual(originHeaders.filter((h) => h === 'authorization' || h === 'x-api-key'), []);
    const env = (r.V2EvidenceReceiptLambdaFunction!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.equal(env.EDGE_ORIGIN_SECRET, complete.edgeOriginSecret);
    assert.equal(env.PUBLIC_RATE_LIMIT, 'edge');
    assert.equal(env.TSA_CERT_FILE, 'test/fixtures/deploy-keys/tsa.pem');
    // The post-quantum TSA: its key, its chain and the TSA history reach the functions that issue.
    const tsaEnv = (r.V2TsaLambdaFunction!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.equal(tsaEnv.TSA_PQ_KMS_KEY_ID, complete.tsaPqKmsKeyArn);
    assert.equal(tsaEnv.TSA_PQ_CERT_FILE, 'test/fixtures/deploy-keys/tsa-pq.pem');
    assert.equal(tsaEnv.TSA_PQ_ROOT_FILE, 'test/fixtures/deploy-keys/tsa-pq-root.pem');
    assert.equal(tsaEnv.TSA_HISTORY_FILE, 'test/fixtures/deploy-keys/tsa-history.json');
    const pqSign = (role: string) =>
      ((r[role]!.Properties!.Policies as { PolicyDocument: { Statement: { Action: string[]; Resource: unknown[] }[] } }[])[0]!.PolicyDocument.Statement)
        .filter((st) => JSON.stringify(st.Resource).includes(complete.tsaPqKmsKeyArn!))
        .flatMap((st) => st.Action)
        .sort();
    assert.deepEqual(pqSign('V2TsaIamRole'), ['kms:GetPublicKey', 'kms:Sign']);
    assert.deepEqual(pqSign('V2EvidenceAnchorIamRole'), ['kms:GetPublicKey', 'kms:Sign']);
    // POST /api/v2/evidence/timestamp issues a post-quantum token when its request names that policy.
    assert.deepEqual(pqSign('V2EvidenceTimestampIamRole'), ['kms:GetPublicKey', 'kms:Sign']);
    assert.deepEqual(pqSign('V2EvidenceVerifyIamRole'), []);
    assert.deepEqual(pqSign('ArchiveIamRole'), []);
  });

  test('check:template refuses the package once a value is a placeholder or a key file is not in the zips, by name', async () => {
    const dir = path.join(tmp, 'edited');
    await cp(path.join(tmp, 'complete'), dir, { recursive: true });
    const stateFile = path.join(dir, 'serverless-state.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as { service: { provider: { environment: Record<string, unknown> }; custom: { edge: Record<string, string>; kms: Record<string, string> } } };
    state.service.provider.environment.JWT_SECRET_KMS_CIPHERTEXT = 'placeholder-set-jwtSecretKmsCiphertext';
    state.service.provider.environment.PQ_PUBLIC_KEY_FILE = 'test/fixtures/deploy-keys/not-packaged.pub';
    state.service.custom.kms.tsaKeyArn = `arn:aws:kms:us-west-2:${account()}:key/${uuid()}`;
    // The classic TSA's certificate where the post-quantum one belongs: packaged, but not ML-DSA-65.
    state.service.provider.environment.TSA_PQ_CERT_FILE = 'test/fixtures/deploy-keys/tsa.pem';
    state.service.custom.edge.originSecret = 'short';
    await writeFile(stateFile, JSON.stringify(state));
    const checked = await run(TSX, ['infra/check-template.ts', dir]);
    assert.equal(checked.code, 1, checked.output);
    assert.match(checked.output, /^FAIL deployment parameters of stage prod/m);
    assert.match(checked.output, /- jwtSecretKmsCiphertext: still the placeholder/);
    assert.match(checked.output, /- pqPublicKeyFile: test\/fixtures\/deploy-keys\/not-packaged\.pub is missing/);
    assert.match(checked.output, /- tsaKmsKeyArn: .* is a key in us-west-2; the functions run in eu-central-1/);
    assert.match(checked.output, /- edgeOriginSecret: 5 characters/);
    assert.match(checked.output, /- tsaPqCertFile: test\/fixtures\/deploy-keys\/tsa\.pem: its key is ec, not ML-DSA-65/);
    assert.doesNotMatch(checked.output, /- (pqSignerKmsKeyArn|tsaCertFile|tsaPqRootFile|tsaPqKmsKeyArn|edgeWebAclArn):/);
    assert.match(checked.output, /template checks FAILED/);
  });
});

describe('the edge rule notices every way around the edge (the complete prod template)', () => {
  type Obj = Record<string, unknown>;
  const copy = () => JSON.parse(JSON.stringify(template)) as CfnTemplate;
  const waf = () => buildEdgeWebAclTemplate({ publicRatePerMinute: 600 });
  const config = (t: CfnTemplate) => t.Resources.EdgeDistribution!.Properties!.DistributionConfig as Obj;
  const behaviours = (t: CfnTemplate) => config(t).CacheBehaviors as Obj[];
  const receipt = (t: CfnTemplate) => behaviours(t).find((b) => b.PathPattern === '/api/v2/evidence/receipt/*')!;
  const cachePolicy = (t: CfnTemplate) => t.Resources.EdgeCachePolicy!.Properties!.CachePolicyConfig as Obj;
  const env = (t: CfnTemplate, id: string) => (t.Resources[id]!.Properties!.Environment as Obj).Variables as Obj;

  test('the complete template holds, and every edgeCache path is cached', () => {
    assert.deepEqual(checkEdge(template, waf(), 'prod').problems, []);
    assert.ok(cachedPathPatterns().length >= 2);
  });

  const cases: [string, (t: CfnTemplate) => void, RegExp][] = [
    ['execute-api left on', (t) => delete t.Resources.HttpApi!.Properties!.DisableExecuteApiEndpoint, /execute-api endpoint is enabled behind the edge/],
    ['the origin back on execute-api', (t) => ((config(t).Origins as Obj[])[0]!.DomainName = { 'Fn::Select': [2, { 'Fn::Split': ['/', { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] }] }] }), /one origin must be the API's custom domain/],
    ['the origin domain without mutual TLS (anyone reaches it around the edge)', (t) => delete t.Resources.EdgeOriginDomainName!.Properties!.MutualTlsAuthentication, /no MutualTlsAuthentication truststore/],
    ['CloudFront presenting no client certificate', (t) => delete ((config(t).Origins as Obj[])[0]!.CustomOriginConfig as Obj).OriginMtlsConfig, /presents no client certificate/],
    ['the client certificate outside us-east-1', (t) => (((config(t).Origins as Obj[])[0]!.CustomOriginConfig as Obj).OriginMtlsConfig = { ClientCertificateArn: 'arn:aws:acm:eu-central-1:123456789012:certificate/00000000-0000-4000-8000-00000000000a' }), /presents no client certificate/],
    ['the domain mapped to nothing', (t) => delete t.Resources.EdgeOriginApiMapping, /not mapped to the HTTP API/],
    ['no secret header', (t) => ((config(t).Origins as Obj[])[0]!.OriginCustomHeaders = []), /X-Edge-Origin/],
    ['a function with another secret', (t) => (env(t, 'V1HealthLambdaFunction').EDGE_ORIGIN_SECRET = 'y'.repeat(64)), /v1Health: EDGE_ORIGIN_SECRET is not the secret the edge sends/],
    ['a function counting in process', (t) => (env(t, 'V2EvidenceVerifyLambdaFunction').PUBLIC_RATE_LIMIT = 'process'), /v2EvidenceVerify: PUBLIC_RATE_LIMIT/],
    ['no WebACL', (t) => delete config(t).WebACLId, /WebACLId/],
    ['the default behaviour cached', (t) => ((config(t).DefaultCacheBehavior as Obj).CachePolicyId = { Ref: 'EdgeCachePolicy' }), /default behaviour must cache nothing/],
    ['credentials passed into a cached behaviour', (t) => (receipt(t).OriginRequestPolicyId = ALL_VIEWER_EXCEPT_HOST), /passes authorization to the origin but caches without it/],
    ['X-API-Key passed into a cached behaviour', (t) => ((t.Resources.EdgePublicOriginRequestPolicy!.Properties!.OriginRequestPolicyConfig as { HeadersConfig: { Headers: string[] } }).HeadersConfig.Headers.push('X-API-Key')), /passes x-api-key to the origin/],
    ['answers cached without Cache-Control', (t) => (cachePolicy(t).DefaultTTL = 86400), /MinTTL\/DefaultTTL must be 0/],
    ['immutable answers cut short', (t) => (cachePolicy(t).MaxTTL = 3600), /less than the year/],
    ['?recheck=1 left out of the key', (t) => (((cachePolicy(t).ParametersInCacheKeyAndForwardedToOrigin as Obj).QueryStringsConfig as Obj).QueryStringBehavior = 'none'), /query strings/],
    ['receipts not cached', (t) => (config(t).CacheBehaviors = behaviours(t).filter((b) => b.PathPattern !== '/api/v2/evidence/receipt/*')), /receipt\/\* \(edgeCache in infra\/functions.json\) is not cached/],
    ['no HSTS', (t) => delete ((t.Resources.EdgeResponseHeadersPolicy!.Properties!.ResponseHeadersPolicyConfig as Obj).SecurityHeadersConfig as Obj).StrictTransportSecurity, /no HSTS/],
    ['no nosniff on a cached behaviour', (t) => delete receipt(t).ResponseHeadersPolicyId, /behaviour \/api\/v2\/evidence\/receipt\/\* does not set X-Content-Type-Options/],
  ];
  for (const [name, mutate, expected] of cases) {
    test(name, () => {
      const t = copy();
      mutate(t);
      const problems = checkEdge(t, waf(), 'prod').problems;
      assert.ok(problems.some((p) => expected.test(p)), JSON.stringify(problems));
    });
  }
});
