/** Types of infra/edge-waf.cjs (CommonJS for osls). */
import type { CfnTemplate } from './template-rules.js';

export function buildEdgeWebAclTemplate(options?: { publicRatePerMinute?: number; stage?: string }): CfnTemplate;
export function buildEdgeResources(): CfnTemplate['Resources'];
export const EDGE_ORIGIN_HEADER: string;
export const EDGE_WINDOW_SECONDS: number;
