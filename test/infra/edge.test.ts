/**
 * The edge in the packaged stack (infra/edge-waf.cjs): the public reads are limited per client IP
 * by a WAF rate-based rule (a WebACL of scope CLOUDFRONT, its own template for us-east-1) on a
 * CloudFront distribution in front of the HTTP API, and every function runs with
 * PUBLIC_RATE_LIMIT=edge behind the edge's secret header. The rule (infra/template-rules.ts
 * checkEdge, run by `npm run check:template`) holds for the package and notices each part missing.
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

describe('the packaged stack limits public reads at the edge', () => {
  test('a CloudFront distribution with the WebACL in front of the API, the rate rule per IP and minute, every function behind it', () => {
    assert.deepEqual(checkEdge(template, waf()).problems, []);
    const dist = template.Resources.EdgeDistribution!;
    assert.equal(dist.Type, 'AWS::CloudFront::Distribution');
    const acl = waf().Resources.EdgeWebAcl!;
    assert.equal(acl.Type, 'AWS::WAFv2::WebACL');
    assert.equal(acl.Properties!.Scope, 'CLOUDFRONT');
    assert.deepEqual({ ...rule(waf()), ScopeDownStatement: undefined }, { Limit: 600, EvaluationWindowSec: 60, AggregateKeyType: 'IP', ScopeDownStatement: undefined });
  });

  test('the check notices each part missing or wrong', () => {
    const cases: [string, (t: CfnTemplate, w: CfnTemplate) => void, RegExp][] = [
      ['no distribution', (t) => delete t.Resources.EdgeDistribution, /no CloudFront distribution/],
      ['no WebACL on it', (t) => delete ((t.Resources.EdgeDistribution!.Properties!.DistributionConfig as Obj).WebACLId), /WebACLId/],
      ['no secret header', (t) => ((((t.Resources.EdgeDistribution!.Properties!.DistributionConfig as Obj).Origins as Obj[])[0]!).OriginCustomHeaders = []), /X-Edge-Origin/],
      ['a cached API', (t) => (((t.Resources.EdgeDistribution!.Properties!.DistributionConfig as Obj).DefaultCacheBehavior as Obj).CachePolicyId = 'x'), /cached/],
      ['a function counting in process', (t) => (((t.Resources.V2EvidenceVerifyLambdaFunction!.Properties!.Environment as Obj).Variables as Obj).PUBLIC_RATE_LIMIT = 'process'), /v2EvidenceVerify: PUBLIC_RATE_LIMIT/],
      ['another limit at the edge', (_t, w) => (rule(w).Limit = 6000), /limit 6000/],
      ['a five-minute window', (_t, w) => (rule(w).EvaluationWindowSec = 300), /window 300/],
      ['per forwarded IP', (_t, w) => (rule(w).AggregateKeyType = 'FORWARDED_IP'), /per FORWARDED_IP/],
      ['a regional WebACL', (_t, w) => (w.Resources.EdgeWebAcl!.Properties!.Scope = 'REGIONAL'), /CLOUDFRONT/],
      ['a 403 instead of 429', (_t, w) => (((((w.Resources.EdgeWebAcl!.Properties!.Rules as Obj[])[0]!.Action as Obj).Block as Obj).CustomResponse as Obj).ResponseCode = 403), /429/],
    ];
    for (const [name, mutate, expected] of cases) {
      const t = copy(template);
      const w = copy(waf());
      mutate(t, w);
      const problems = checkEdge(t, w).problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });

  test('the WebACL template refuses a limit WAF cannot take', () => {
    assert.throws(() => buildEdgeWebAclTemplate({ publicRatePerMinute: 5 }), /at least 10/);
  });
});
