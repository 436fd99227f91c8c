'use strict';
/**
 * The edge in front of the API: where the per-IP limit of the public reads is enforced in AWS
 * (decisions.md "Limits": at the edge in production, a WAF rate-based rule; a public read writes
 * nothing to DynamoDB). Functions run with PUBLIC_RATE_LIMIT=edge and count nothing themselves.
 *
 * Why CloudFront and a separate WebACL stack: AWS WAF cannot be associated with an API Gateway
 * HTTP API (only REST APIs, CloudFront, ALB, AppSync, Cognito, App Runner, Verified Access), and a
 * WebACL for CloudFront (scope CLOUDFRONT) can only be created in us-east-1. So:
 *  - {@link buildEdgeWebAclTemplate}: a CloudFormation template of its own, deployed once per stage
 *    in us-east-1 (docs/runbook.md "The edge"); its WebAclArn output is the `edgeWebAclArn` param;
 *  - {@link buildEdgeResources}: in the service's stack, a CloudFront distribution in front of the
 *    HTTP API with that WebACL, adding a secret header that the functions require
 *    (EDGE_ORIGIN_SECRET, lib/http/app.ts), so the API cannot be called around the WAF, and
 *    forwarding the viewer's address (CloudFront-Viewer-Address), which the functions then use as
 *    the client address (the register and login limits stay per client, not per edge server).
 *
 * The rule: requests per client IP (the viewer address CloudFront sees) in a 60-second window,
 * limit PUBLIC_RATE_PER_MINUTE, over every GET and HEAD request (the public reads, and the few
 * authenticated GETs, which a dashboard calls a handful of times a minute). POSTs are not counted
 * here: register and login have their own per-IP DynamoDB counter, the evidence endpoints their
 * per-account limits. Over the limit: 429 problem+json with Retry-After, as the in-process limiter
 * answers (the RateLimit-* fields, which the WAF cannot compute, are absent).
 */

/** The WAF's rate-based evaluation window: one minute, as PUBLIC_RATE_PER_MINUTE says. */
const EDGE_WINDOW_SECONDS = 60;
/** The header CloudFront adds with the stage's secret; the functions refuse requests without it. */
const EDGE_ORIGIN_HEADER = 'X-Edge-Origin';
/** CloudFront managed policies (fixed IDs): no caching; every viewer header but Host, plus CloudFront's. */
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';
/** The problem+json the WAF answers over the limit (its body cannot name the request's path or id). */
const RATE_LIMITED_BODY = JSON.stringify({
  type: 'about:blank',
  title: 'Too many requests',
  status: 429,
  code: 'rate_limit_exceeded',
  detail: 'Rate limit exceeded: public endpoints allow a fixed number of requests per minute per client address. Retry after the number of seconds in Retry-After.',
  scope: 'ip',
  window: 'minute',
});

/** The rate-based rule of the WebACL (also what the template check compares against). */
function rateRule(limit) {
  return {
    Name: 'public-reads-per-ip',
    Priority: 0,
    Action: { Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'rate-limited', ResponseHeaders: [{ Name: 'Retry-After', Value: String(EDGE_WINDOW_SECONDS) }] } } },
    Statement: {
      RateBasedStatement: {
        Limit: limit,
        EvaluationWindowSec: EDGE_WINDOW_SECONDS,
        AggregateKeyType: 'IP',
        ScopeDownStatement: {
          OrStatement: {
            Statements: ['GET', 'HEAD'].map((method) => ({
              ByteMatchStatement: { FieldToMatch: { Method: {} }, PositionalConstraint: 'EXACTLY', SearchString: method, TextTransformations: [{ Priority: 0, Type: 'NONE' }] },
            })),
          },
        },
      },
    },
    VisibilityConfig: { SampledRequestsEnabled: true, CloudWatchMetricsEnabled: true, MetricName: 'public-reads-per-ip' },
  };
}

/** The us-east-1 template: one WebACL (scope CLOUDFRONT) with the rate rule; output WebAclArn. */
function buildEdgeWebAclTemplate({ publicRatePerMinute = 600, stage = 'dev' } = {}) {
  if (!Number.isInteger(publicRatePerMinute) || publicRatePerMinute < 10) throw new Error('a WAF rate limit is an integer of at least 10');
  return {
    AWSTemplateFormatVersion: '2010-09-09',
    Description: `Edge WebACL of evidence-anchoring (${stage}): per-IP rate limit of the public reads. Deploy in us-east-1 (scope CLOUDFRONT).`,
    Resources: {
      EdgeWebAcl: {
        Type: 'AWS::WAFv2::WebACL',
        Properties: {
          Name: `evidence-anchoring-${stage}-edge`,
          Scope: 'CLOUDFRONT',
          DefaultAction: { Allow: {} },
          CustomResponseBodies: { 'rate-limited': { ContentType: 'APPLICATION_JSON', Content: RATE_LIMITED_BODY } },
          Rules: [rateRule(publicRatePerMinute)],
          VisibilityConfig: { SampledRequestsEnabled: true, CloudWatchMetricsEnabled: true, MetricName: `evidence-anchoring-${stage}-edge` },
        },
      },
    },
    Outputs: { WebAclArn: { Description: 'Pass as --param="edgeWebAclArn=…" to the service stack', Value: { 'Fn::GetAtt': ['EdgeWebAcl', 'Arn'] } } },
  };
}

/**
 * The service stack's part: the distribution in front of the HTTP API, with the WebACL and the
 * secret origin header. Origin requests carry every viewer header but Host (API Gateway routes by
 * its own host name) and CloudFront's own headers, CloudFront-Viewer-Address among them (AWS's
 * managed policy AllViewerExceptHostHeader, made for API Gateway origins).
 */
function buildEdgeResources() {
  return {
    EdgeDistribution: {
      Type: 'AWS::CloudFront::Distribution',
      Properties: {
        DistributionConfig: {
          Enabled: true,
          Comment: { 'Fn::Sub': '${AWS::StackName}: the API behind the edge WebACL' },
          HttpVersion: 'http2and3',
          PriceClass: "${param:edgePriceClass, 'PriceClass_100'}",
          WebACLId: '${self:custom.edge.webAclArn}',
          Origins: [
            {
              Id: 'api',
              // https://<api-id>.execute-api.<region>.amazonaws.com → its host name.
              DomainName: { 'Fn::Select': [2, { 'Fn::Split': ['/', { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] }] }] },
              CustomOriginConfig: { OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] },
              OriginCustomHeaders: [{ HeaderName: EDGE_ORIGIN_HEADER, HeaderValue: '${self:custom.edge.originSecret}' }],
            },
          ],
          DefaultCacheBehavior: {
            TargetOriginId: 'api',
            ViewerProtocolPolicy: 'redirect-to-https',
            AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
            CachedMethods: ['GET', 'HEAD'],
            CachePolicyId: CACHING_DISABLED,
            OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST,
            Compress: false,
          },
        },
      },
    },
  };
}

module.exports = { buildEdgeWebAclTemplate, buildEdgeResources, rateRule, EDGE_ORIGIN_HEADER, EDGE_WINDOW_SECONDS };
