/**
 * dynalite parses every expression of every request with its PEG parsers (db/conditionParser,
 * db/updateParser, db/projectionParser), and that is a quarter of its CPU on the anchor path: a
 * batch of 100 anchors (bench/batch-sync.ts) spent 544 ms of the embedded DynamoDB's ~2 s parsing
 * the same six expressions again and again (2.15 ms for the publish's condition alone). Our
 * requests repeat a handful of expressions with new values, so the parse of an expression is
 * kept and re-bound to each request's values instead of being parsed again.
 *
 * What a parse depends on, and so the cache key: the expression, the attribute names (resolved
 * into the tree as strings), and the TYPE of each attribute value (the parsers check operand
 * types: begins_with on S or B, ADD on N or sets, `+` on N…). The tree holds each value object
 * itself (resolveAttrVal returns it): a cached tree keeps a marker where a value was, and a hit
 * copies the tree with the request's value objects put back in place. The parse's other effect,
 * deleting each name and value it used from the context's `unused…` sets (dynalite refuses a
 * request with an unused one), is recorded and replayed.
 *
 * Not cached: a parse that failed (its message is what the request answers), and the two checks
 * that read a value itself, not only its type: attribute_type (the type name it is given) and
 * BETWEEN (that the bounds are ordered). Those expressions are parsed every time, as before.
 *
 * Nothing else of dynalite changes: the result of a hit is the tree the parser would have built.
 * test/local/dynalite-expressions.test.ts compares both on every expression the service sends.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const dynaliteDir = path.dirname(require.resolve('dynalite'));
const PARSERS = ['conditionParser', 'updateParser', 'projectionParser'];
/** dynalite's order of types (getImmediateType). */
const TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'];
/** At most this many parses are kept per parser (the oldest goes first). */
const MAX_ENTRIES = 2000;
const VALUE = Symbol('attribute value');
const INSTALLED = Symbol.for('evidence.dynalite-expressions');

/** The type dynalite reads of an attribute value. */
function typeOf(value) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return '?';
  return TYPES.find((t) => value[t] != null) ?? '?';
}

/** The parse's tree with a marker in place of each attribute value object (by identity). */
function template(node, values) {
  if (node === null || typeof node !== 'object') return node;
  const key = values.get(node);
  if (key !== undefined) return { [VALUE]: key };
  if (Array.isArray(node)) return node.map((n) => template(n, values));
  // The parsers' maps (nestedPaths, pathHeads) have no prototype: a copy keeps that.
  const out = Object.create(Object.getPrototypeOf(node));
  for (const [k, v] of Object.entries(node)) out[k] = template(v, values);
  return out;
}

/** A copy of a template with the request's value objects put back. */
function bind(node, attrVals) {
  if (node === null || typeof node !== 'object') return node;
  if (VALUE in node) return attrVals[node[VALUE]];
  if (Array.isArray(node)) return node.map((n) => bind(n, attrVals));
  const out = Object.create(Object.getPrototypeOf(node));
  for (const [k, v] of Object.entries(node)) out[k] = bind(v, attrVals);
  return out;
}

/** The keys a parse deletes from one of the context's `unused…` sets, recorded as it deletes them. */
function recording(target, used) {
  return new Proxy(target ?? {}, {
    deleteProperty(t, key) {
      used.push(key);
      return Reflect.deleteProperty(t, key);
    },
  });
}

/** The parser's parse with its successful parses kept (see the module comment). */
export function cachedParse(parse) {
  const cache = new Map();
  return function parseCached(input, options) {
    const context = options?.context;
    if (!context || typeof input !== 'string' || /\b(attribute_type|between)\b/i.test(input)) return parse(input, options);
    const attrVals = context.attrVals ?? {};
    const types = Object.keys(attrVals)
      .sort()
      .map((k) => `${k}:${typeOf(attrVals[k])}`)
      .join(',');
    const key = `${input}\u0000${JSON.stringify(context.attrNames ?? null)}\u0000${types}`;
    const hit = cache.get(key);
    if (hit) {
      for (const name of hit.names) delete context.unusedAttrNames?.[name];
      for (const name of hit.vals) delete context.unusedAttrVals?.[name];
      return bind(hit.tree, attrVals);
    }
    const names = [];
    const vals = [];
    const tree = parse(input, {
      ...options,
      context: { ...context, unusedAttrNames: recording(context.unusedAttrNames, names), unusedAttrVals: recording(context.unusedAttrVals, vals) },
    });
    // A string is the parse's error message (checkErrors): answered, not kept.
    if (tree !== null && typeof tree === 'object') {
      const byObject = new Map(Object.entries(attrVals).map(([k, v]) => [v, k]));
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value);
      cache.set(key, { tree: template(tree, byObject), names, vals });
    }
    return tree;
  };
}

/** Puts the cache in front of dynalite's three expression parsers, once per process. */
export function installExpressionCache() {
  if (globalThis[INSTALLED]) return;
  for (const name of PARSERS) {
    const parser = require(path.join(dynaliteDir, 'db', name));
    parser.parse = cachedParse(parser.parse);
  }
  globalThis[INSTALLED] = true;
}
