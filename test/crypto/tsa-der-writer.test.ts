/**
 * The DER writer under the embedded TSA (lib/crypto/tsa/der-writer.ts): each primitive gives the
 * same bytes as asn1js, which wrote the tokens before, and reads back through the strict DER reader
 * (lib/crypto/tsa/der.ts) as the value it was given.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import * as asn1js from 'asn1js';
import { namedBitString as asn1jsNamedBitString } from '../../lib/crypto/tsa/asn1.js';
import {
  bitsSet,
  children,
  decodeDer,
  readBitString,
  readBoolean,
  readGeneralizedTime,
  readInteger,
  readNull,
  readOctetString,
  readOid,
  stringValue,
} from '../../lib/crypto/tsa/der.js';
import {
  boolean,
  compareDer,
  explicit,
  generalizedTime,
  implicitConstructed,
  implicitPrimitive,
  integer,
  namedBitString,
  nullValue,
  octetString,
  oid,
  retag,
  sequence,
  setOf,
  tlv,
  utf8String,
} from '../../lib/crypto/tsa/der-writer.js';

const hex = (b: Uint8Array | ArrayBuffer): string => Buffer.from(b instanceof Uint8Array ? b : new Uint8Array(b)).toString('hex');
const fromHex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'));

describe('DER writer: INTEGER (X.690 §8.3)', () => {
  const values: bigint[] = [0n, 1n, 127n, 128n, 129n, 255n, 256n, 32767n, 32768n, 32769n, 65535n, 65536n];
  for (let n = 1n; n <= 200n; n++) values.push(2n ** n - 1n, 2n ** n, 2n ** n + 1n);
  for (let i = 0; i < 50; i++) values.push(BigInt(`0x${randomBytes(1 + (i % 24)).toString('hex')}`));
  const all = [...values, ...values.map((v) => -v)];

  it('writes minimal two\'s complement like asn1js, positive and negative, and reads back', () => {
    for (const v of all) {
      const der = integer(v);
      assert.equal(hex(der), hex(asn1js.Integer.fromBigInt(v).toBER()), `INTEGER ${v}`);
      assert.equal(readInteger(decodeDer(der), 'integer'), v);
    }
  });

  it('takes safe integer numbers and refuses others', () => {
    assert.equal(hex(integer(3)), '020103');
    assert.equal(hex(integer(-128)), '020180');
    assert.equal(hex(integer(128)), '02020080');
    assert.throws(() => integer(1.5), RangeError);
    assert.throws(() => integer(2 ** 53), RangeError);
  });
});

describe('DER writer: OBJECT IDENTIFIER (X.690 §8.19)', () => {
  const oids = [
    '0.0',
    '0.39',
    '1.0',
    '1.39',
    '2.0',
    '2.39',
    '2.40',
    '2.47',
    '2.48',
    '2.100.3',
    '2.999.1',
    '1.2.840.113549.1.9.16.1.4',
    '2.16.840.1.101.3.4.2.1',
    '1.3.6.1.4.1.99999.1.1',
    '1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16',
    '1.3.6.1.4.1.127.128.16383.16384.2097151.2097152.4294967295.4294967296',
    '2.25.329800735698586629295641978511506172918',
  ];

  it('writes like asn1js and reads back', () => {
    for (const dotted of oids) {
      const der = oid(dotted);
      assert.equal(hex(der), hex(new asn1js.ObjectIdentifier({ value: dotted }).toBER()), dotted);
      assert.equal(readOid(decodeDer(der), 'oid'), dotted);
    }
  });

  it('refuses what is not a dotted OID', () => {
    for (const bad of ['', '1', '3.1', '1.40', '0.40', '1.2.', '1..2', '01.2', '1.02', '1.2.a', '-1.2']) {
      assert.throws(() => oid(bad), RangeError, bad);
    }
  });
});

describe('DER writer: GeneralizedTime (X.690 §11.7, RFC 3161 §2.4.2)', () => {
  it('writes every millisecond like asn1js: fraction without trailing zeros, none for 0 ms', () => {
    const base = Date.UTC(2026, 10, 24, 2, 45, 7);
    for (let ms = 0; ms < 1000; ms++) {
      const date = new Date(base + ms);
      const der = generalizedTime(date);
      assert.equal(hex(der), hex(new asn1js.GeneralizedTime({ valueDate: date }).toBER()), `${ms} ms`);
      assert.equal(readGeneralizedTime(decodeDer(der), 'time').getTime(), date.getTime());
    }
    const text = (ms: number) => Buffer.from(decodeDer(generalizedTime(new Date(base + ms))).value).toString('latin1');
    assert.equal(text(0), '20261124024507Z');
    assert.equal(text(5), '20261124024507.005Z');
    assert.equal(text(50), '20261124024507.05Z');
    assert.equal(text(500), '20261124024507.5Z');
    assert.equal(text(123), '20261124024507.123Z');
  });

  it('writes four-digit years like asn1js, and refuses others and invalid dates', () => {
    for (const year of [1, 99, 100, 999, 1950, 1999, 2000, 2049, 2050, 9999]) {
      const date = new Date(Date.UTC(2000, 1, 29, 23, 59, 59, 10));
      date.setUTCFullYear(year, 0, 1);
      assert.equal(hex(generalizedTime(date)), hex(new asn1js.GeneralizedTime({ valueDate: date }).toBER()), `year ${year}`);
      assert.equal(readGeneralizedTime(decodeDer(generalizedTime(date)), 'time').getTime(), date.getTime());
    }
    const tooLate = new Date(Date.UTC(10000, 0, 1));
    assert.throws(() => generalizedTime(tooLate), RangeError);
    assert.throws(() => generalizedTime(new Date(Date.UTC(-1, 0, 1))), RangeError);
    assert.throws(() => generalizedTime(new Date(Number.NaN)), RangeError);
  });
});

describe('DER writer: BIT STRING of named bits (X.690 §11.2.2)', () => {
  it('drops trailing zero bits like the asn1js helper, and reads back', () => {
    const sets: number[][] = [[]];
    for (let bit = 0; bit <= 40; bit++) sets.push([bit], [0, bit], [bit, bit + 3]);
    sets.push([0, 2, 5, 14, 15, 16, 17, 25]);
    for (const bits of sets) {
      const der = namedBitString(bits);
      assert.equal(hex(der), hex(asn1jsNamedBitString(bits).toBER()), `bits ${bits.join(',')}`);
      assert.deepEqual(bitsSet(readBitString(decodeDer(der), 'bits')), [...new Set(bits)].sort((a, b) => a - b));
    }
    assert.equal(hex(namedBitString([])), '030100');
    assert.equal(hex(namedBitString([5])), '03020204'); // badDataFormat: 6 bits, 2 unused
    assert.equal(hex(namedBitString([25])), '0305060000 0040'.replace(' ', ''));
    assert.throws(() => namedBitString([-1]), RangeError);
  });
});

describe('DER writer: lengths, strings, BOOLEAN, NULL', () => {
  it('writes minimal definite lengths (X.690 §10.1) like asn1js for OCTET STRINGs of any size', () => {
    for (const n of [0, 1, 127, 128, 129, 255, 256, 257, 65535, 65536, 70000, 16777216]) {
      const bytes = new Uint8Array(n).fill(0xa5);
      const der = octetString(bytes);
      assert.equal(hex(der.subarray(0, 8)), hex(new Uint8Array(new asn1js.OctetString({ valueHex: bytes }).toBER()).subarray(0, 8)), `length ${n}`);
      assert.equal(der.byteLength, new asn1js.OctetString({ valueHex: bytes }).toBER().byteLength);
      assert.equal(readOctetString(decodeDer(der), 'octets').byteLength, n);
    }
  });

  it('writes UTF8String, BOOLEAN and NULL like asn1js', () => {
    for (const text of ['', 'the request is not a DER TimeStampReq', 'Grüße € 😀']) {
      const der = utf8String(text);
      assert.equal(hex(der), hex(new asn1js.Utf8String({ value: text }).toBER()));
      assert.equal(stringValue(decodeDer(der)), text);
    }
    assert.equal(hex(boolean(true)), hex(new asn1js.Boolean({ value: true }).toBER()));
    assert.equal(hex(boolean(false)), hex(new asn1js.Boolean({ value: false }).toBER()));
    assert.equal(readBoolean(decodeDer(boolean(true)), 'b'), true);
    assert.equal(hex(nullValue()), hex(new asn1js.Null().toBER()));
    readNull(decodeDer(nullValue()), 'null');
  });
});

describe('DER writer: SEQUENCE, SET OF, tags, pre-encoded DER', () => {
  it('sorts SET OF components as octet strings, shorter ones padded with zeros (X.690 §11.6)', () => {
    const a = integer(256); // 02 02 01 00
    const b = integer(1); // 02 01 01
    const c = octetString(fromHex('00')); // 04 01 00
    const d = sequence(); // 30 00
    const input = [d, c, a, b];
    const set = setOf(input);
    assert.equal(hex(set), `310c${hex(b)}${hex(a)}${hex(c)}${hex(d)}`);
    assert.deepEqual(input, [d, c, a, b], 'the input is not reordered');
    assert.equal(compareDer(fromHex('01'), fromHex('0100')), 0);
    assert.ok(compareDer(fromHex('01'), fromHex('0101')) < 0);
    assert.ok(compareDer(fromHex('0201'), fromHex('01ff')) > 0);
    assert.equal(children(decodeDer(set)).length, 4);
  });

  it('writes SEQUENCE around pre-encoded DER unchanged, and context tags explicit and implicit', () => {
    const name = fromHex('3011310f300d06035504030c0654534120434e');
    assert.equal(hex(sequence(name, integer(7))), `3016${hex(name)}020107`);
    assert.equal(hex(explicit(4, name)), `a413${hex(name)}`);
    assert.equal(hex(explicit(0, explicit(4, name))), `a015a413${hex(name)}`);
    assert.equal(hex(implicitConstructed(0, [name, name])), `a026${hex(name)}${hex(name)}`);
    assert.equal(hex(implicitPrimitive(1, fromHex('0102'))), '81020102');
    const set = setOf([integer(1)]);
    const tagged = retag(set, 0xa0);
    assert.equal(hex(tagged), `a0${hex(set).slice(2)}`);
    assert.equal(hex(set), '3103020101', 'retag copies');
    assert.throws(() => retag(set, 0x80), RangeError, 'IMPLICIT keeps the constructed bit');
    assert.throws(() => tlv(0x1f, []), RangeError, 'high tag numbers are not written');
    assert.throws(() => tlv(0x100, []), RangeError);
  });
});
