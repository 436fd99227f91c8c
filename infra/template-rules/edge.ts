/** The edge rules: the CloudFront distribution and the WAF web ACL in front of the API. */
import { isDeepStrictEqual } from 'node:util';
import edgeWaf from '../edge-waf.cjs';
import registry from '../registry.cjs';
import type { RegistryFunction } from '../registry.cjs';
import { type CfnResource, type CfnTemplate, type Json, type RuleResult, asArray, isObject } from './common.js';

export interface EdgeWafTemplate {
  Resources: Record<string, CfnResource>;
}

/** Headers a cached answer may depend on: when the origin gets one, the cache key must hold it. */
const KEYED_HEADERS = ['authorization', 'x-api-key', 'accept-encoding'];
/** What CloudFront's managed policies (fixed ids) put in the cache key and pass to the origin. */
const MANAGED_CACHE_POLICIES: Record<string, { headers: string[]; ttl: { min: number; def: number; max: number } } | undefined> = {
  [edgeWaf.CACHING_DISABLED]: { headers: [], ttl: { min: 0, def: 0, max: 0 } },
};
const MANAGED_ORIGIN_REQUEST_POLICIES: Record<string, { all: boolean; headers: string[]; cookies: boolean } | undefined> = {
  [edgeWaf.ALL_VIEWER_EXCEPT_HOST]: { all: true, headers: [], cookies: true },
};

/** A behaviour's cache policy, resolved: from the template (Ref) or a managed one (id). */
function cachePolicyOf(resources: Record<string, CfnResource>, id: Json | undefined) {
  if (typeof id === 'string') return MANAGED_CACHE_POLICIES[id];
  const res = isObject(id) && typeof id.Ref === 'string' ? resources[id.Ref] : undefined;
  const config = res?.Type === 'AWS::CloudFront::CachePolicy' && isObject(res.Properties?.CachePolicyConfig) ? res.Properties.CachePolicyConfig : undefined;
  if (!config) return undefined;
  const key = isObject(config.ParametersInCacheKeyAndForwardedToOrigin) ? config.ParametersInCacheKeyAndForwardedToOrigin : {};
  const headersConfig = isObject(key.HeadersConfig) ? key.HeadersConfig : {};
  const headers = headersConfig.HeaderBehavior === 'whitelist' ? asArray(headersConfig.Headers).map((h) => String(h).toLowerCase()) : [];
  if (key.EnableAcceptEncodingGzip === true || key.EnableAcceptEncodingBrotli === true) headers.push('accept-encoding');
  const cookies = isObject(key.CookiesConfig) ? key.CookiesConfig.CookieBehavior : undefined;
  const query = isObject(key.QueryStringsConfig) ? key.QueryStringsConfig.QueryStringBehavior : undefined;
  return { headers, cookies, query, ttl: { min: Number(config.MinTTL), def: Number(config.DefaultTTL), max: Number(config.MaxTTL) } };
}

/** What a behaviour's origin request policy passes on: every viewer header (but a list), or a list. */
function originRequestOf(resources: Record<string, CfnResource>, id: Json | undefined) {
  if (id === undefined) return { all: false, headers: [] as string[], cookies: false };
  if (typeof id === 'string') return MANAGED_ORIGIN_REQUEST_POLICIES[id];
  const res = isObject(id) && typeof id.Ref === 'string' ? resources[id.Ref] : undefined;
  const config = res?.Type === 'AWS::CloudFront::OriginRequestPolicy' && isObject(res.Properties?.OriginRequestPolicyConfig) ? res.Properties.OriginRequestPolicyConfig : undefined;
  if (!config) return undefined;
  const h = isObject(config.HeadersConfig) ? config.HeadersConfig : {};
  const listed = asArray(h.Headers).map((x) => String(x).toLowerCase());
  const behavior = String(h.HeaderBehavior);
  const all = behavior === 'allViewer' || behavior === 'allViewerAndWhitelistCloudFront' || behavior === 'allExcept';
  const excluded = behavior === 'allExcept' ? listed : [];
  const c = isObject(config.CookiesConfig) ? config.CookiesConfig.CookieBehavior : 'none';
  return { all, headers: behavior === 'whitelist' || behavior === 'allViewerAndWhitelistCloudFront' ? listed : [], excluded, cookies: c !== 'none' };
}

/**
 * The edge (infra/edge-waf.cjs, docs/decisions.md "Deploying"). With the edge on: the public reads
 * are limited per client address by a WAF rate-based rule in front of every function, and nothing
 * goes around it: a CloudFront distribution with a WebACL from us-east-1 whose one origin is the
 * HTTP API's own custom domain, which requires mutual TLS with the client certificate CloudFront
 * presents, the execute-api endpoint disabled, the secret origin header equal
 * to every function's EDGE_ORIGIN_SECRET and PUBLIC_RATE_LIMIT=edge. Caching: the default
 * behaviour caches nothing; a cached behaviour (every `edgeCache` path of infra/functions.json has
 * one) follows the origin's Cache-Control (no default TTL, a year at most), keys on the query
 * string, and any credential or encoding header the origin receives is part of its key, with no
 * cookies. Every behaviour answers with HSTS and nosniff. With the edge off (dev only): no
 * distribution, the functions count in process and need no secret, execute-api stays on. In the
 * WebACL's template: scope CLOUDFRONT and a rate-based rule per IP over GET and HEAD, a 60-second
 * window, the limit the functions are configured with (PUBLIC_RATE_PER_MINUTE), answering 429 with
 * Retry-After.
 */
export function checkEdge(template: CfnTemplate, waf: EdgeWafTemplate, stage = 'dev'): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const dist = resources.EdgeDistribution;
  const config = isObject(dist?.Properties?.DistributionConfig) ? dist.Properties.DistributionConfig : undefined;
  const api = resources.HttpApi?.Properties ?? {};
  const httpFunctions = registry.allFunctions().filter((f) => f.kind === 'http');
  const envOf = (fn: RegistryFunction) => {
    const vars = resources[registry.naming.lambda(fn.name)]?.Properties?.Environment;
    return isObject(vars) && isObject(vars.Variables) ? vars.Variables : {};
  };
  let limit: number | undefined;
  for (const fn of httpFunctions) {
    const rate = Number(envOf(fn).PUBLIC_RATE_PER_MINUTE);
    if (Number.isInteger(rate)) limit ??= rate;
  }

  if (!dist) {
    if (stage !== 'dev') problems.push(`EdgeDistribution: no CloudFront distribution in front of the API (the edge is required on stage ${stage})`);
    else {
      if (api.DisableExecuteApiEndpoint === true) problems.push('HttpApi: the execute-api endpoint is disabled with no edge in front: nothing could reach the API');
      for (const fn of httpFunctions) {
        const env = envOf(fn);
        if (env.PUBLIC_RATE_LIMIT !== 'process') problems.push(`${fn.name}: PUBLIC_RATE_LIMIT is ${JSON.stringify(env.PUBLIC_RATE_LIMIT)} with no edge, not process`);
        if (typeof env.EDGE_ORIGIN_SECRET === 'string' && env.EDGE_ORIGIN_SECRET !== '') problems.push(`${fn.name}: EDGE_ORIGIN_SECRET is set with no edge to send it (every request would be refused)`);
      }
    }
  } else if (dist.Type !== 'AWS::CloudFront::Distribution' || !config) problems.push('EdgeDistribution: not a CloudFront distribution');
  else {
    const acl = config.WebACLId;
    if (typeof acl !== 'string' || !acl.startsWith('arn:aws:wafv2:us-east-1:') || !acl.includes(':global/webacl/')) problems.push(`EdgeDistribution: WebACLId is not a CLOUDFRONT WebACL ARN (${JSON.stringify(acl)})`);

    // The one way in: the API's custom domain, mapped to the HTTP API; execute-api disabled.
    if (api.DisableExecuteApiEndpoint !== true) problems.push('HttpApi: the execute-api endpoint is enabled behind the edge (DisableExecuteApiEndpoint is not true): the WAF can be gone around');
    const domainRes = resources.EdgeOriginDomainName;
    const domain = domainRes?.Type === 'AWS::ApiGatewayV2::DomainName' ? domainRes.Properties?.DomainName : undefined;
    const configs = asArray(domainRes?.Properties?.DomainNameConfigurations).filter(isObject);
    if (domain === undefined) problems.push('EdgeOriginDomainName: no AWS::ApiGatewayV2::DomainName for the origin');
    else if (!configs.some((c) => c.EndpointType === 'REGIONAL' && c.CertificateArn !== undefined)) problems.push('EdgeOriginDomainName: no REGIONAL endpoint with a certificate');
    const mapped = Object.values(resources).some(
      (r) => r.Type === 'AWS::ApiGatewayV2::ApiMapping' && isDeepStrictEqual(r.Properties?.ApiId, { Ref: 'HttpApi' }) && isDeepStrictEqual(r.Properties?.DomainName, { Ref: 'EdgeOriginDomainName' }),
    );
    if (!mapped) problems.push('EdgeOriginApiMapping: the origin domain is not mapped to the HTTP API');
    // The custom domain is on the internet too: mutual TLS makes CloudFront its only client.
    const mtls = domainRes?.Properties?.MutualTlsAuthentication;
    const truststore = isObject(mtls) ? mtls.TruststoreUri : undefined;
    if (domain !== undefined && (truststore === undefined || truststore === '')) problems.push('EdgeOriginDomainName: no MutualTlsAuthentication truststore: the origin domain answers any client, around the edge');
    const origins = Array.isArray(config.Origins) ? config.Origins.filter(isObject) : [];
    const origin = origins[0];
    if (origins.length !== 1 || !origin || domain === undefined || !isDeepStrictEqual(origin.DomainName, domain)) problems.push('EdgeDistribution: the one origin must be the API\'s custom domain (EdgeOriginDomainName)');
    const originConfig = origin && isObject(origin.CustomOriginConfig) ? origin.CustomOriginConfig : {};
    const clientCert = isObject(originConfig.OriginMtlsConfig) ? originConfig.OriginMtlsConfig.ClientCertificateArn : undefined;
    if (typeof clientCert !== 'string' || !clientCert.startsWith('arn:aws:acm:us-east-1:')) problems.push('EdgeDistribution: the origin presents no client certificate (CustomOriginConfig.OriginMtlsConfig, ACM us-east-1): the mutual-TLS origin would refuse CloudFront');
    const headers = origin && Array.isArray(origin.OriginCustomHeaders) ? origin.OriginCustomHeaders.filter(isObject) : [];
    const secret = headers.find((h) => h.HeaderName === edgeWaf.EDGE_ORIGIN_HEADER);
    if (!secret || typeof secret.HeaderValue !== 'string' || secret.HeaderValue.length < 32) problems.push(`EdgeDistribution: no ${edgeWaf.EDGE_ORIGIN_HEADER} secret header (32 characters or more) on the origin`);
    for (const fn of httpFunctions) {
      const env = envOf(fn);
      if (env.PUBLIC_RATE_LIMIT !== 'edge') problems.push(`${fn.name}: PUBLIC_RATE_LIMIT is ${JSON.stringify(env.PUBLIC_RATE_LIMIT)}, not edge`);
      if (env.EDGE_ORIGIN_SECRET === undefined || env.EDGE_ORIGIN_SECRET === '') problems.push(`${fn.name}: no EDGE_ORIGIN_SECRET`);
      else if (secret && !isDeepStrictEqual(env.EDGE_ORIGIN_SECRET, secret.HeaderValue)) problems.push(`${fn.name}: EDGE_ORIGIN_SECRET is not the secret the edge sends`);
    }

    const defaultBehavior = isObject(config.DefaultCacheBehavior) ? config.DefaultCacheBehavior : {};
    const behaviors = [{ where: 'the default behaviour', b: defaultBehavior }, ...asArray(config.CacheBehaviors).filter(isObject).map((b) => ({ where: `behaviour ${String(b.PathPattern)}`, b }))];
    if (defaultBehavior.CachePolicyId !== edgeWaf.CACHING_DISABLED) problems.push('EdgeDistribution: the default behaviour must cache nothing (managed CachingDisabled policy): only the edgeCache paths are cached');
    const methods = Array.isArray(defaultBehavior.AllowedMethods) ? defaultBehavior.AllowedMethods : [];
    if (methods.length !== 7) problems.push(`EdgeDistribution: every method must pass (allowed: ${methods.join(', ')})`);
    for (const { where, b } of behaviors) {
      const policy = isObject(b.ResponseHeadersPolicyId) && typeof b.ResponseHeadersPolicyId.Ref === 'string' ? resources[b.ResponseHeadersPolicyId.Ref] : undefined;
      const cfg = policy?.Type === 'AWS::CloudFront::ResponseHeadersPolicy' && isObject(policy.Properties?.ResponseHeadersPolicyConfig) ? policy.Properties.ResponseHeadersPolicyConfig : {};
      const sec = isObject(cfg.SecurityHeadersConfig) ? cfg.SecurityHeadersConfig : {};
      const hsts = isObject(sec.StrictTransportSecurity) ? sec.StrictTransportSecurity : undefined;
      if (!hsts || Number(hsts.AccessControlMaxAgeSec) < 31536000 || hsts.Override !== true) problems.push(`EdgeDistribution: ${where} has no HSTS of a year or more (a response headers policy of the stack)`);
      if (!isObject(sec.ContentTypeOptions) || sec.ContentTypeOptions.Override !== true) problems.push(`EdgeDistribution: ${where} does not set X-Content-Type-Options: nosniff`);

      const cache = cachePolicyOf(resources, b.CachePolicyId);
      const forward = originRequestOf(resources, b.OriginRequestPolicyId);
      if (!cache || !forward) {
        problems.push(`EdgeDistribution: ${where} names a cache or origin request policy this check does not know`);
        continue;
      }
      if (cache.ttl.max === 0) continue; // caches nothing
      if (cache.ttl.def !== 0 || cache.ttl.min !== 0) problems.push(`EdgeDistribution: ${where} caches answers the origin did not mark (MinTTL/DefaultTTL must be 0: the origin's Cache-Control decides)`);
      if (cache.ttl.max < 31536000) problems.push(`EdgeDistribution: ${where} keeps an immutable answer less than the year the origin allows (MaxTTL ${cache.ttl.max})`);
      if ('query' in cache && cache.query !== 'all') problems.push(`EdgeDistribution: ${where} leaves query strings out of the cache key (?recheck=1 would get the cached answer)`);
      if (('cookies' in cache && cache.cookies !== 'none') || forward.cookies) problems.push(`EdgeDistribution: ${where} passes cookies to a cached answer`);
      for (const h of KEYED_HEADERS) {
        const excluded = 'excluded' in forward && (forward.excluded ?? []).includes(h);
        const forwarded = (forward.all && !excluded) || forward.headers.includes(h);
        if (forwarded && !cache.headers.includes(h)) problems.push(`EdgeDistribution: ${where} passes ${h} to the origin but caches without it in the key (one viewer's answer could reach another)`);
      }
    }
    const patterns = new Set(behaviors.map(({ b }) => b.PathPattern));
    for (const p of edgeWaf.cachedPathPatterns()) {
      const b = behaviors.find(({ b: x }) => x.PathPattern === p)?.b;
      if (!patterns.has(p) || !b || (cachePolicyOf(resources, b.CachePolicyId)?.ttl.max ?? 0) === 0) problems.push(`EdgeDistribution: ${p} (edgeCache in infra/functions.json) is not cached at the edge`);
    }
  }

  problems.push(...checkEdgeWebAcl(waf, limit));
  if (!dist && stage === 'dev') {
    return { name: 'edge: off on dev (no WebACL given): the functions limit public reads in process; the WebACL template holds', summary: 'no distribution, execute-api on', problems };
  }
  return {
    name: 'edge: a WAF rate rule in front of every function, execute-api disabled, only public answers cached, HSTS and nosniff',
    summary: `CloudFront + WebACL, ${limit ?? '?'} requests per minute and IP`,
    problems,
  };
}

/**
 * The edge WebACL's own template (us-east-1): scope CLOUDFRONT, a rate-based rule per client IP
 * over GET and HEAD in a 60-second window, `limit` requests (the functions' PUBLIC_RATE_PER_MINUTE,
 * when known), blocking with 429 and Retry-After.
 */
export function checkEdgeWebAcl(waf: EdgeWafTemplate, limit: number | undefined): string[] {
  const problems: string[] = [];
  const acls = Object.values(waf.Resources).filter((r) => r.Type === 'AWS::WAFv2::WebACL');
  const acl = acls[0]?.Properties;
  if (acls.length !== 1 || !acl) problems.push('edge WebACL template: exactly one AWS::WAFv2::WebACL expected');
  else {
    if (acl.Scope !== 'CLOUDFRONT') problems.push(`edge WebACL: scope ${String(acl.Scope)}, expected CLOUDFRONT`);
    const rules = Array.isArray(acl.Rules) ? acl.Rules.filter(isObject) : [];
    const rated = rules.find((r) => isObject(r.Statement) && isObject(r.Statement.RateBasedStatement));
    const rbs = rated && isObject(rated.Statement) && isObject(rated.Statement.RateBasedStatement) ? rated.Statement.RateBasedStatement : undefined;
    if (!rated || !rbs) problems.push('edge WebACL: no rate-based rule');
    else {
      if (rbs.AggregateKeyType !== 'IP') problems.push(`edge WebACL: the rate is per ${String(rbs.AggregateKeyType)}, not per client IP`);
      if (rbs.EvaluationWindowSec !== 60) problems.push(`edge WebACL: window ${String(rbs.EvaluationWindowSec)} s, expected 60 (a per-minute limit)`);
      if (limit !== undefined && rbs.Limit !== limit) problems.push(`edge WebACL: limit ${String(rbs.Limit)}, the functions say PUBLIC_RATE_PER_MINUTE=${limit}`);
      if (!JSON.stringify(rbs.ScopeDownStatement ?? {}).includes('"SearchString":"GET"')) problems.push('edge WebACL: the rule does not count GET requests (the public reads)');
      const block = isObject(rated.Action) && isObject(rated.Action.Block) ? rated.Action.Block : undefined;
      const response = block && isObject(block.CustomResponse) ? block.CustomResponse : undefined;
      if (!response || response.ResponseCode !== 429) problems.push('edge WebACL: over the limit the rule must block with 429');
      else if (!JSON.stringify(response.ResponseHeaders ?? []).includes('"Retry-After"')) problems.push('edge WebACL: the 429 must carry Retry-After');
    }
  }
  return problems;
}
