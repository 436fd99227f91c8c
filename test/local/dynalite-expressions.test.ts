/**
 * The local DynamoDB's expression cache (lib/local/dynalite-expressions.mjs): a parse served from
 * the cache is the tree dynalite's own parser builds for the same request, holding that request's
 * value objects, with the same names and values marked used; a request whose values' types
 * differ, a failed parse, and the value-reading checks (attribute_type, BETWEEN) are parsed afresh.
 * The expressions are the service's own (the publish, the meter's charge, a key condition, a
 * projection), as dynalite's validations hand them to the parser.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { cachedParse, type ExpressionParse } from '../../lib/local/dynalite-expressions.mjs';

const require = createRequire(import.meta.url);
const dynaliteDir = path.dirname(require.resolve('dynalite'));
const parser = (name: string) => require(path.join(dynaliteDir, 'db', name)) as { parse: ExpressionParse };
const db = require(path.join(dynaliteDir, 'db', 'index.js')) as { compare: unknown };
const validations = require(path.join(dynaliteDir, 'validations', 'index.js')) as { validateExpressions(data: object): unknown };

/** dynalite's own reserved-word check, as its validations hand it to a parser. */
const isReserved = (() => {
  const update = parser('updateParser');
  const original = update.parse;
  let found: ((name: string) => boolean) | undefined;
  update.parse = (input, options) => {
    found = options?.context?.isReserved as typeof found;
    return original(input, options);
  };
  try {
    validations.validateExpressions({ UpdateExpression: 'SET a = :a', ExpressionAttributeValues: { ':a': { S: 'x' } } });
  } finally {
    update.parse = original;
  }
  if (!found) throw new Error("dynalite's validations gave the parser no isReserved");
  return found;
})();

type Values = Record<string, Record<string, unknown>>;
interface Request {
  expression: string;
  names?: Record<string, string>;
  values?: Values;
}

/** The context dynalite's validateExpressions gives the parser. */
function contextFor(r: Request) {
  return {
    attrNames: r.names,
    attrVals: r.values,
    unusedAttrNames: Object.fromEntries(Object.keys(r.names ?? {}).map((k) => [k, true])),
    unusedAttrVals: Object.fromEntries(Object.keys(r.values ?? {}).map((k) => [k, true])),
    isReserved,
    compare: db.compare,
  };
}

/** Parses `r` with `parse`: the tree (or error message) and what it left unused. */
function run(parse: ExpressionParse, r: Request) {
  const context = contextFor(r);
  const tree = parse(r.expression, { context });
  return { tree, unusedNames: Object.keys(context.unusedAttrNames), unusedVals: Object.keys(context.unusedAttrVals) };
}

/** Every object of `tree` that is one of `values` (by identity), with its key. */
function valueObjects(tree: unknown, values: Values, found: string[] = []): string[] {
  if (tree === null || typeof tree !== 'object') return found;
  const key = Object.keys(values).find((k) => values[k] === tree);
  if (key) return [...found, key];
  for (const v of Object.values(tree as object)) found = valueObjects(v, values, found);
  return found;
}

const publishSet = Array.from({ length: 32 }, (_, i) => `#f${i} = :f${i}`).join(', ');
const publish = (seed: string): Request => ({
  expression: `SET #_wt = :_wt, ${publishSet}, #v = if_not_exists(#v, :zero) + :one, #s = :to`,
  names: { '#_wt': '_wt', '#v': 'anchor_v', '#s': 'anchor_state', ...Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`#f${i}`, `field_${i}`])) },
  values: {
    ':_wt': { N: `${seed.length}` },
    ':zero': { N: '0' },
    ':one': { N: '1' },
    ':to': { S: 'publishing' },
    ...Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`:f${i}`, { S: `${seed}-${i}` }])),
  },
});
const charge = (n: string, hold: string): Request => ({
  expression: 'SET #_wt = :_wt, expires_at = :exp, hold_shard = :shard, #h0 = :t ADD n :k, used :q REMOVE #s0',
  names: { '#_wt': '_wt', '#h0': `h#${hold}`, '#s0': 'h#old' },
  values: { ':_wt': { N: n }, ':exp': { N: '1900000000' }, ':shard': { S: 'quota#3' }, ':t': { N: n }, ':k': { N: '1' }, ':q': { N: '1' } },
});
const claimCondition = (claim: string): Request => ({
  expression: 'attribute_not_exists(#s) AND (attribute_not_exists(dead_claims) OR NOT contains(dead_claims, :claim))',
  names: { '#s': 'anchor_state' },
  values: { ':claim': { S: claim } },
});
const meterCondition = (m: string): Request => ({
  expression: 'm >= :m AND n <= :nmax AND (attribute_not_exists(used) OR used <= :umax) AND attribute_not_exists(#h0)',
  names: { '#h0': `h#${m}` },
  values: { ':m': { N: m }, ':nmax': { N: '99' }, ':umax': { N: '9999' } },
});
const keyCondition = (pk: string): Request => ({ expression: 'pk = :pk AND begins_with(sk, :leaf)', values: { ':pk': { S: pk }, ':leaf': { S: 'leaf#' } } });
const projection = (): Request => ({ expression: 'image_hash, #s, anchor_v', names: { '#s': 'anchor_state' } });

const cases: [string, string, Request, Request][] = [
  ['the publish (32 fields set)', 'updateParser', publish('a'), publish('second')],
  ['the meter charge', 'updateParser', charge('1', 'a:1:x'), charge('2', 'a:2:y')],
  ['the claim condition', 'conditionParser', claimCondition('c-1'), claimCondition('c-2')],
  ['the meter condition', 'conditionParser', meterCondition('100'), meterCondition('200')],
  ['a key condition', 'conditionParser', keyCondition('p1'), keyCondition('p2')],
  ['a projection', 'projectionParser', projection(), projection()],
];

describe('the local DynamoDB keeps the parse of an expression and re-binds it to each request', () => {
  for (const [what, name, first, second] of cases) {
    it(`${what}: the cached tree is the parser's own, with the second request's values`, () => {
      const original = parser(name).parse;
      const cached = cachedParse(original);
      const fresh = run(original, second);
      assert.equal(typeof fresh.tree, 'object', `dynalite parses it: ${String(fresh.tree)}`);
      run(cached, first); // kept
      const again = run(cached, second); // served from the cache
      assert.deepEqual(again.tree, fresh.tree, 'the same tree as a fresh parse');
      assert.deepEqual(again.unusedNames, fresh.unusedNames, 'the same names left unused');
      assert.deepEqual(again.unusedVals, fresh.unusedVals, 'the same values left unused');
      const values = second.values ?? {};
      assert.deepEqual(valueObjects(again.tree, values).sort(), valueObjects(fresh.tree, values).sort(), "the second request's own value objects, where the parser puts them");
      assert.equal(valueObjects(again.tree, first.values ?? {}).length, 0, "none of the first request's values");
    });
  }

  it('parses afresh when a value has another type, and answers the parser error', () => {
    const cached = cachedParse(parser('updateParser').parse);
    run(cached, charge('1', 'a'));
    const wrong = charge('1', 'a');
    (wrong.values as Values)[':k'] = { S: 'one' };
    const out = run(cached, wrong);
    assert.equal(typeof out.tree, 'string', 'ADD of a string is refused, as dynalite refuses it');
    assert.match(String(out.tree), /Incorrect operand type/);
  });

  it('keeps no failed parse, and parses BETWEEN and attribute_type every time (they read the values)', () => {
    const calls: string[] = [];
    const original = parser('conditionParser').parse;
    const cached = cachedParse((input, options) => {
      calls.push(input);
      return original(input, options);
    });
    const between = (lo: string, hi: string): Request => ({ expression: 'n BETWEEN :lo AND :hi', values: { ':lo': { N: lo }, ':hi': { N: hi } } });
    assert.equal(typeof run(cached, between('1', '2')).tree, 'object');
    assert.match(String(run(cached, between('3', '2')).tree), /upper bound to be greater than or equal to lower bound/);
    const typed = (t: string): Request => ({ expression: 'attribute_type(n, :t)', values: { ':t': { S: t } } });
    assert.equal(typeof run(cached, typed('N')).tree, 'object');
    assert.match(String(run(cached, typed('X')).tree), /Invalid attribute type name/);
    const undefinedValue: Request = { expression: 'n = :missing', values: { ':other': { N: '1' } } };
    run(cached, undefinedValue);
    run(cached, undefinedValue);
    assert.deepEqual(calls, ['n BETWEEN :lo AND :hi', 'n BETWEEN :lo AND :hi', 'attribute_type(n, :t)', 'attribute_type(n, :t)', 'n = :missing', 'n = :missing']);
  });
});
