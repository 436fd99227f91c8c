/** Types of infra/edge-waf.cjs (CommonJS for osls). */
import type { CfnTemplate } from './template-rules.js';

export interface EdgeValues {
  webAclArn: string;
  originSecret: string;
  originDomain: string;
  originCertificateArn: string;
  originHostedZoneId: string;
}

export function buildEdgeWebAclTemplate(options?: { publicRatePerMinute?: number; stage?: string }): CfnTemplate;
export function buildEdgeResources(edge: EdgeValues): CfnTemplate['Resources'];
export function buildEdgeApiExtension(): Record<string, { Properties: Record<string, unknown> }>;
export function cachedPathPatterns(): string[];
export const EDGE_ORIGIN_HEADER: string;
export const EDGE_WINDOW_SECONDS: number;
export const CACHING_DISABLED: string;
export const ALL_VIEWER_EXCEPT_HOST: string;
export const PUBLIC_ORIGIN_HEADERS: string[];
export const HSTS_MAX_AGE: number;
