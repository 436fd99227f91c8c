import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalize, canonicalizeToBytes, JcsError } from '../../lib/crypto/jcs.js';

describe('RFC 8785 canonicalisation', () => {
  it('reproduces the §3.2.2 sample with numbers, literals and escapes', () => {
    // Input and output exactly as printed in RFC 8785 §3.2.2 (input parsed as JSON first).
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    assert.equal(canonicalize(JSON.parse(input)), expected);
  });

  it('encodes the §3.2.2 sample as the UTF-8 bytes listed in §3.2.4', () => {
    const input = String.raw`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`;
    const expectedHex = [
      '7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72',
      '75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a',
      '5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31',
      '65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37',
      '5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30',
      '30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d',
    ].join(' ').replaceAll(' ', '');
    assert.equal(Buffer.from(canonicalizeToBytes(JSON.parse(input))).toString('hex'), expectedHex);
  });

  it('sorts member names by UTF-16 code units as in the §3.2.3 example', () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    const expected =
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}';
    assert.equal(canonicalize(JSON.parse(input)), expected);
  });

  it('serialises every finite number of the Appendix B table like ECMAScript', () => {
    // RFC 8785 Appendix B: IEEE 754 bit pattern → canonical text.
    const table: [string, string][] = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
      ['43143ff3c1cb0959', '1424953923781206.2'],
    ];
    for (const [bits, expected] of table) {
      const n = Buffer.from(bits, 'hex').readDoubleBE(0);
      assert.equal(canonicalize(n), expected, bits);
    }
  });

  it('rejects the non-finite values of Appendix B', () => {
    for (const bits of ['7fffffffffffffff', '7ff0000000000000']) {
      assert.throws(() => canonicalize(Buffer.from(bits, 'hex').readDoubleBE(0)), JcsError, bits);
    }
    assert.throws(() => canonicalize(-Infinity), JcsError);
  });
});

describe('string serialisation', () => {
  it('uses the short escapes and lower-case \\u00xx for control characters', () => {
    assert.equal(canonicalize('\b\t\n\f\r'), String.raw`"\b\t\n\f\r"`);
    assert.equal(canonicalize('\u0000\u001f\u000b'), String.raw`"\u0000\u001f\u000b"`);
    assert.equal(canonicalize('"\\'), String.raw`"\"\\"`);
  });

  it('writes DEL, line separators, slashes and non-ASCII characters as themselves', () => {
    assert.equal(canonicalize('\u007f\u2028\u2029/é😀'), '"\u007f\u2028\u2029/é😀"');
  });

  it('agrees with JSON.stringify for every BMP code unit outside the surrogate range', () => {
    let s = '';
    for (let c = 0; c <= 0xffff; c++) if (c < 0xd800 || c > 0xdfff) s += String.fromCharCode(c);
    assert.equal(canonicalize(s), JSON.stringify(s));
  });

  it('rejects unpaired surrogates in values and member names', () => {
    for (const bad of ['\ud800', 'a\udc00', '\ude00\ud83d', '\ud83d']) {
      assert.throws(() => canonicalize(bad), JcsError);
      assert.throws(() => canonicalize({ [bad]: 1 }), JcsError);
    }
  });
});

describe('structure', () => {
  it('writes nested objects and arrays without whitespace, members sorted at every level', () => {
    const value = { b: [1, { z: null, a: 'x' }, []], a: {}, c: -0, d: true };
    assert.equal(canonicalize(value), '{"a":{},"b":[1,{"a":"x","z":null},[]],"c":0,"d":true}');
  });

  it('accepts objects without a prototype and a value shared by two members', () => {
    const shared = { k: 1 };
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { y: shared, x: shared });
    assert.equal(canonicalize(bare), '{"x":{"k":1},"y":{"k":1}}');
  });

  it('rejects values JSON cannot represent, naming where they are', () => {
    const cases: unknown[] = [undefined, 1n, Symbol('s'), () => 1, NaN, { a: [1, undefined] }, { a: { b: 2n } }];
    for (const value of cases) assert.throws(() => canonicalize(value), JcsError);
    assert.throws(() => canonicalize({ a: [1, undefined] }), /at \$\["a"\]\[1\]/);
  });

  it('rejects dates, maps, typed arrays and class instances instead of coercing them', () => {
    class Point {
      x = 1;
    }
    for (const value of [new Date(0), new Map(), new Uint8Array(1), new Point()]) {
      assert.throws(() => canonicalize(value), /only plain objects/);
    }
  });

  it('rejects sparse arrays and circular references', () => {
    // eslint-disable-next-line no-sparse-arrays
    assert.throws(() => canonicalize([1, , 3]), /sparse/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.throws(() => canonicalize(cyclic), /circular/);
  });
});
