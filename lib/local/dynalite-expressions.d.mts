/** dynalite's expression parsers with their parses kept (see dynalite-expressions.mjs). */
export type ExpressionParse = (input: string, options?: { context?: Record<string, unknown> }) => unknown;
export function cachedParse(parse: ExpressionParse): ExpressionParse;
export function installExpressionCache(): void;
