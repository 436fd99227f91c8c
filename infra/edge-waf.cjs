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
 *    (`npm run edge-waf` writes it: infra/edge-waf-template.ts);
 *  - {@link buildEdgeResources}: in the service's stack, a CloudFront distribution in front of the
 *    HTTP API's own custom domain (execute-api disabled) with that WebACL, caching only the public
 *    answers the origin marks so, adding HSTS and nosniff, and a secret header that the functions require
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

const registry = require('./registry.cjs');

/** The WAF's rate-based evaluation window: one minute, as PUBLIC_RATE_PER_MINUTE says. */
const EDGE_WINDOW_SECONDS = 60;
/** The header CloudFront adds with the stage's secret; the functions refuse requests without it. */
const EDGE_ORIGIN_HEADER = 'X-Edge-Origin';
/** CloudFront managed policies (fixed IDs): no caching; every viewer header but Host, plus CloudFront's. */
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';
const ALL_METHODS = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'];
/**
 * What a cached public read passes to the origin: the viewer's address (the functions' client
 * address) and the CORS request headers. No Authorization (CloudFront forwards it only when it
 * is part of the cache key), no X-API-Key, no cookie, no X-Request-Id (a cached answer would
 * repeat another request's id).
 */
const PUBLIC_ORIGIN_HEADERS = ['CloudFront-Viewer-Address', 'Origin', 'Access-Control-Request-Method', 'Access-Control-Request-Headers'];
/** HSTS for two years (the preload list's minimum is one). */
const HSTS_MAX_AGE = 63072000;
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

/** The paths the edge caches (what the origin marks `public`: receipts, verify answers), as CloudFront path patterns. */
function cachedPathPatterns() {
  return registry
    .allFunctions()
    .filter((fn) => fn.edgeCache === true)
    .map((fn) => fn.path.replace(/\{[^}]+\}/g, '*'));
}

/**
 * The service stack's part with the edge on (docs/decisions.md "Deploying"):
 *  - the HTTP API reachable only through a regional custom domain of its own
 *    (`edgeOriginDomain`, certificate `edgeOriginCertificateArn`) that admits by mutual TLS only
 *    the client certificate CloudFront presents (truststore `edgeOriginTruststoreUri`, client
 *    certificate `edgeOriginClientCertificateArn` in ACM us-east-1), its execute-api default
 *    endpoint disabled ({@link buildEdgeApiExtension}), the domain's DNS record when
 *    `edgeOriginHostedZoneId` is given;
 *  - the distribution in front of that domain, with the WebACL and the secret origin header;
 *  - by default nothing cached (managed CachingDisabled) and every viewer header but Host passed on
 *    (managed AllViewerExceptHostHeader: the API's credentials reach the functions);
 *  - for the public reads whose answers the origin marks `public` (infra/functions.json
 *    `edgeCache`), a cache policy that follows the origin's Cache-Control (default TTL 0: nothing
 *    without it is kept), keyed on the path, the query string and the normalised Accept-Encoding,
 *    and an origin request policy that forwards no Authorization, no X-API-Key and no cookie: a
 *    cached answer can only be one made without credentials;
 *  - on every answer HSTS and `X-Content-Type-Options: nosniff` (a response headers policy).
 * `edge`: the values of custom.edge (strings; `${…}` references in the generator tests).
 */
function buildEdgeResources(edge) {
  const hostedZone = edge.originHostedZoneId;
  const resources = {
    EdgeOriginDomainName: {
      Type: 'AWS::ApiGatewayV2::DomainName',
      Properties: {
        DomainName: edge.originDomain,
        DomainNameConfigurations: [{ CertificateArn: edge.originCertificateArn, EndpointType: 'REGIONAL', SecurityPolicy: 'TLS_1_2' }],
        // Mutual TLS: the TLS handshake itself refuses a client without a certificate issued by
        // the truststore's CA, before API Gateway routes, throttles or invokes anything. CloudFront
        // presents that certificate (OriginMtlsConfig below); nobody else has its key.
        MutualTlsAuthentication: {
          TruststoreUri: edge.originTruststoreUri,
          ...(edge.originTruststoreVersion ? { TruststoreVersion: edge.originTruststoreVersion } : {}),
        },
      },
    },
    EdgeOriginApiMapping: {
      Type: 'AWS::ApiGatewayV2::ApiMapping',
      Properties: { ApiId: { Ref: 'HttpApi' }, DomainName: { Ref: 'EdgeOriginDomainName' }, Stage: { Ref: 'HttpApiStage' } },
    },
    EdgeCachePolicy: {
      Type: 'AWS::CloudFront::CachePolicy',
      Properties: {
        CachePolicyConfig: {
          Name: { 'Fn::Sub': '${AWS::StackName}-public-reads' },
          Comment: 'Public reads: cached as long as the origin says (Cache-Control), never without it',
          MinTTL: 0,
          DefaultTTL: 0,
          MaxTTL: 31536000,
          ParametersInCacheKeyAndForwardedToOrigin: {
            EnableAcceptEncodingGzip: true,
            EnableAcceptEncodingBrotli: true,
            HeadersConfig: { HeaderBehavior: 'none' },
            CookiesConfig: { CookieBehavior: 'none' },
            QueryStringsConfig: { QueryStringBehavior: 'all' },
          },
        },
      },
    },
    EdgePublicOriginRequestPolicy: {
      Type: 'AWS::CloudFront::OriginRequestPolicy',
      Properties: {
        OriginRequestPolicyConfig: {
          Name: { 'Fn::Sub': '${AWS::StackName}-public-reads' },
          Comment: 'Public reads: the viewer address and CORS headers only; no credentials, no cookies',
          HeadersConfig: { HeaderBehavior: 'whitelist', Headers: PUBLIC_ORIGIN_HEADERS },
          CookiesConfig: { CookieBehavior: 'none' },
          QueryStringsConfig: { QueryStringBehavior: 'none' },
        },
      },
    },
    EdgeResponseHeadersPolicy: {
      Type: 'AWS::CloudFront::ResponseHeadersPolicy',
      Properties: {
        ResponseHeadersPolicyConfig: {
          Name: { 'Fn::Sub': '${AWS::StackName}-security' },
          Comment: 'HSTS and nosniff on every answer of the edge',
          SecurityHeadersConfig: {
            StrictTransportSecurity: { AccessControlMaxAgeSec: HSTS_MAX_AGE, IncludeSubdomains: true, Preload: false, Override: true },
            ContentTypeOptions: { Override: true },
          },
        },
      },
    },
    EdgeDistribution: {
      Type: 'AWS::CloudFront::Distribution',
      Properties: {
        DistributionConfig: {
          Enabled: true,
          Comment: { 'Fn::Sub': '${AWS::StackName}: the API behind the edge WebACL' },
          HttpVersion: 'http2and3',
          PriceClass: "${param:edgePriceClass, 'PriceClass_100'}",
          WebACLId: edge.webAclArn,
          Origins: [
            {
              Id: 'api',
              // The API's own custom domain: with the execute-api endpoint disabled it is the only
              // way in, and CloudFront sends it as Host and SNI (Host is not forwarded).
              DomainName: edge.originDomain,
              CustomOriginConfig: {
                OriginProtocolPolicy: 'https-only',
                OriginSSLProtocols: ['TLSv1.2'],
                // Origin mTLS: the client certificate (ACM, us-east-1) the custom domain requires.
                OriginMtlsConfig: { ClientCertificateArn: edge.originClientCertificateArn },
              },
              OriginCustomHeaders: [{ HeaderName: EDGE_ORIGIN_HEADER, HeaderValue: edge.originSecret }],
            },
          ],
          DefaultCacheBehavior: {
            TargetOriginId: 'api',
            ViewerProtocolPolicy: 'redirect-to-https',
            AllowedMethods: ALL_METHODS,
            CachedMethods: ['GET', 'HEAD'],
            CachePolicyId: CACHING_DISABLED,
            OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST,
            ResponseHeadersPolicyId: { Ref: 'EdgeResponseHeadersPolicy' },
            Compress: false,
          },
          CacheBehaviors: cachedPathPatterns().map((PathPattern) => ({
            PathPattern,
            TargetOriginId: 'api',
            ViewerProtocolPolicy: 'redirect-to-https',
            AllowedMethods: ['GET', 'HEAD', 'OPTIONS'],
            CachedMethods: ['GET', 'HEAD'],
            CachePolicyId: { Ref: 'EdgeCachePolicy' },
            OriginRequestPolicyId: { Ref: 'EdgePublicOriginRequestPolicy' },
            ResponseHeadersPolicyId: { Ref: 'EdgeResponseHeadersPolicy' },
            Compress: false,
          })),
        },
      },
    },
  };
  if (hostedZone) {
    resources.EdgeOriginDnsRecord = {
      Type: 'AWS::Route53::RecordSet',
      Properties: {
        HostedZoneId: hostedZone,
        Name: edge.originDomain,
        Type: 'A',
        AliasTarget: {
          DNSName: { 'Fn::GetAtt': ['EdgeOriginDomainName', 'RegionalDomainName'] },
          HostedZoneId: { 'Fn::GetAtt': ['EdgeOriginDomainName', 'RegionalHostedZoneId'] },
          EvaluateTargetHealth: false,
        },
      },
    };
  }
  return resources;
}

/** With the edge on, the HTTP API's execute-api endpoint is disabled (merged into osls' HttpApi). */
function buildEdgeApiExtension() {
  return { HttpApi: { Properties: { DisableExecuteApiEndpoint: true } } };
}

/**
 * Whether the edge is on, from osls' resolveVariable (custom.edgeSetup in serverless.yml, and
 * infra/serverless-resources.cjs): always on every stage but dev; on dev only when a WebACL ARN
 * is given (its absence would otherwise leave a distribution CloudFront refuses to create).
 */
async function edgeEnabled(resolveVariable) {
  const stage = await resolveVariable('sls:stage');
  if (stage !== 'dev') return true;
  const acl = await resolveVariable('self:custom.edge.webAclArn');
  return typeof acl === 'string' && acl !== '';
}

/**
 * `custom.edgeSetup` of serverless.yml: what the functions' environment takes from the edge.
 * Edge on: PUBLIC_RATE_LIMIT=edge, the secret, and the distribution's address as the public base
 * URL. Edge off (dev): the in-memory per-IP window of each function (`process`), no secret, and
 * the HTTP API's own endpoint.
 */
async function edgeSetup({ resolveVariable }) {
  const enabled = await edgeEnabled(resolveVariable);
  if (!enabled) return { enabled, publicRateLimit: 'process', originSecret: '', apiEndpoint: { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] } };
  return {
    enabled,
    publicRateLimit: 'edge',
    originSecret: await resolveVariable('self:custom.edge.originSecret'),
    apiEndpoint: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': ['EdgeDistribution', 'DomainName'] }]] },
  };
}

module.exports = edgeSetup;
Object.assign(module.exports, {
  buildEdgeWebAclTemplate,
  buildEdgeResources,
  buildEdgeApiExtension,
  cachedPathPatterns,
  edgeEnabled,
  edgeSetup,
  rateRule,
  EDGE_ORIGIN_HEADER,
  EDGE_WINDOW_SECONDS,
  CACHING_DISABLED,
  ALL_VIEWER_EXCEPT_HOST,
  PUBLIC_ORIGIN_HEADERS,
  HSTS_MAX_AGE,
});
