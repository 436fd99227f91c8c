/**
 * The edge in the packaged dev stack (infra/edge-waf.cjs, docs/decisions.md "Deploying"): with no
 * WebACL given, dev deploys with the edge off (its absent WebACL would make the CloudFront create
 * fail), so the functions limit public reads in process, need no secret, and the execute-api
 * endpoint stays on; every other stage must have the edge. The WebACL's own template (scope
 * CLOUDFRONT, us-east-1) is checked either way. The edge-on package (prod, complete parameters)
 * is checked by test/offline/package.offline.ts (`npm run test:offline`).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { before, describe, test } from 'node:test';
import { packagedTemplate } from '../support/packaged-template.js';
import { type CfnTemplate, checkEdge } from '../../infra/template-rules.js';

const { buildEdgeWebAclTemplate } = createRequire(import.meta.url)('../../infra/edge-waf.cjs') as typeof import('../../infra/edge-waf.cjs');
let template: CfnTemplate;

before(async () => {
  template = await packagedTemplate();
});

const copy = <T>(t: T): T => JSON.parse(JSON.stringify(t)) as T;
const waf = (rate = 600) => buildEdgeWebAclTemplate({ publicRatePerMinute: rate });
type Obj = Record<string, unknown>;
const rule = (t: CfnTemplate) => ((t.Resources.EdgeWebAcl!.Properties!.Rules as Obj[])[0]!.Statement as Obj).RateBasedStatement as Obj;
const env = (t: CfnTemplate, id: string) => (t.Resources[id]!.Properties!.Environment as Obj).Variables as Obj;

describe('dev without a WebACL deploys with the edge off', () => {
  test('no distribution, execute-api on, every function counting public reads in process with no secret', () => {
    assert.deepEqual(checkEdge(template, waf(), 'dev').problems, []);
    assert.equal(template.Resources.EdgeDistribution, undefined);
    assert.notEqual(template.Resources.HttpApi!.Properties!.DisableExecuteApiEndpoint, true);
    assert.equal(env(template, 'V2EvidenceVerifyLambdaFunction').PUBLIC_RATE_LIMIT, 'process');
    assert.equal(env(template, 'V2EvidenceVerifyLambdaFunction').EDGE_ORIGIN_SECRET, '');
    assert.deepEqual(env(template, 'V2EvidenceVerifyLambdaFunction').PUBLIC_BASE_URL, { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] });
  });

  test('the same package is refused on any other stage, and a half-off edge is noticed', () => {
    assert.ok(checkEdge(template, waf(), 'prod').problems.some((p) => /edge is required on stage prod/.test(p)));
    const cases: [string, (t: CfnTemplate) => void, RegExp][] = [
      ['execute-api disabled with nothing in front', (t) => (t.Resources.HttpApi!.Properties!.DisableExecuteApiEndpoint = true), /nothing could reach the API/],
      ['a function still expecting the edge', (t) => (env(t, 'V1HealthLambdaFunction').PUBLIC_RATE_LIMIT = 'edge'), /v1Health: PUBLIC_RATE_LIMIT/],
      ['a secret no one sends', (t) => (env(t, 'V1StatsLambdaFunction').EDGE_ORIGIN_SECRET = 'x'.repeat(40)), /v1Stats: EDGE_ORIGIN_SECRET is set/],
    ];
    for (const [name, mutate, expected] of cases) {
      const t = copy(template);
      mutate(t);
      const problems = checkEdge(t, waf(), 'dev').problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });
});

describe('the edge WebACL template (us-east-1)', () => {
  test('scope CLOUDFRONT, the rate rule per IP and minute', () => {
    const acl = waf().Resources.EdgeWebAcl!;
    assert.equal(acl.Type, 'AWS::WAFv2::WebACL');
    assert.equal(acl.Properties!.Scope, 'CLOUDFRONT');
    assert.deepEqual({ ...rule(waf()), ScopeDownStatement: undefined }, { Limit: 600, EvaluationWindowSec: 60, AggregateKeyType: 'IP', ScopeDownStatement: undefined });
  });

  test('the check notices each part wrong', () => {
    const cases: [string, (w: CfnTemplate) => void, RegExp][] = [
      ['another limit at the edge', (w) => (rule(w).Limit = 6000), /limit 6000/],
      ['a five-minute window', (w) => (rule(w).EvaluationWindowSec = 300), /window 300/],
      ['per forwarded IP', (w) => (rule(w).AggregateKeyType = 'FORWARDED_IP'), /per FORWARDED_IP/],
      ['a regional WebACL', (w) => (w.Resources.EdgeWebAcl!.Properties!.Scope = 'REGIONAL'), /CLOUDFRONT/],
      ['a 403 instead of 429', (w) => (((((w.Resources.EdgeWebAcl!.Properties!.Rules as Obj[])[0]!.Action as Obj).Block as Obj).CustomResponse as Obj).ResponseCode = 403), /429/],
    ];
    for (const [name, mutate, expected] of cases) {
      const w = copy(waf());
      mutate(w);
      const problems = checkEdge(template, w, 'dev').problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });

  test('the WebACL template refuses a limit WAF cannot take', () => {
    assert.throws(() => buildEdgeWebAclTemplate({ publicRatePerMinute: 5 }), /at least 10/);
  });
});
