/**
 * The strict DER reader under the RFC 3161 verifier (lib/crypto/tsa/der.ts): what X.690 §10/§11
 * forbid is refused, with bounds and depth checked, and the values it decodes are right.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DerError,
  MAX_DEPTH,
  TAG,
  bitsSet,
  checkStructure,
  children,
  decodeDer,
  readBitString,
  readBoolean,
  readGeneralizedTime,
  readInteger,
  readNull,
  readOctetString,
  readOid,
  readTime,
  readUtcTime,
  sequence,
  stringValue,
} from '../../lib/crypto/tsa/der.js';
import { nameToString, namesEqual } from '../../lib/crypto/tsa/x509-verify.js';

const hex = (h: string) => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'));
const el = (h: string) => decodeDer(hex(h));

describe('DER lengths and structure', () => {
  it('reads short and long form lengths', () => {
    assert.deepEqual(el('0403010203').value, hex('010203'));
    const long = new Uint8Array(3 + 200);
    long.set([0x04, 0x81, 200]);
    assert.equal(decodeDer(long).value.byteLength, 200);
    const longer = new Uint8Array(4 + 300);
    longer.set([0x04, 0x82, 0x01, 0x2c]);
    assert.equal(decodeDer(longer).value.byteLength, 300);
  });

  it('refuses indefinite, non-minimal, oversized and overrunning lengths', () => {
    assert.throws(() => el('3080 0500 0000'), /indefinite length/);
    assert.throws(() => el('04 81 03 010203'), /non-minimal length/);
    assert.throws(() => el('04 82 0003 010203'), /non-minimal length/);
    assert.throws(() => el('04 85 0000000001 00'), /length too large/);
    assert.throws(() => el('04 04 010203'), /truncated/);
    assert.throws(() => el('04 82 01'), /truncated/);
    assert.throws(() => el('04'), /truncated: missing length/);
    assert.throws(() => decodeDer(new Uint8Array(0)), /truncated/);
  });

  it('refuses trailing bytes after the value', () => {
    assert.throws(() => el('0500 00'), /trailing bytes/);
  });

  it('refuses a child that overruns its parent, and bytes left over inside a parent', () => {
    assert.throws(() => children(el('3003 0402 0102')), DerError);
    assert.throws(() => checkStructure(el('3004 0500 0401')), /truncated/);
  });

  it('finds structural errors deep inside with checkStructure, and limits the depth', () => {
    assert.throws(() => checkStructure(el('3006 3004 3080 0000')), /indefinite/);
    let deep = hex('0500');
    for (let i = 0; i < MAX_DEPTH + 2; i++) deep = Uint8Array.from([0x30, deep.length, ...deep]);
    assert.throws(() => checkStructure(decodeDer(deep)), /nested deeper/);
    let ok = hex('0500');
    for (let i = 0; i < MAX_DEPTH - 1; i++) ok = Uint8Array.from([0x30, ok.length, ...ok]);
    checkStructure(decodeDer(ok));
  });

  it('reads high tag numbers only in minimal form', () => {
    const e = el('9f2001 00');
    assert.equal(e.tagNumber, 32);
    assert.equal(e.cls, 2);
    assert.throws(() => el('9f1e01 00'), /non-minimal tag/);
    assert.throws(() => el('9f8020 01 00'), /non-minimal tag/);
  });

  it('checks tags when reading typed values', () => {
    assert.throws(() => sequence(el('3100'), 'x'), /unexpected tag/);
    assert.throws(() => readOctetString(el('2403 040100'), 'x'), /unexpected tag 0x24/);
  });
});

describe('DER values', () => {
  it('decodes INTEGERs in two’s complement and refuses padded ones', () => {
    assert.equal(readInteger(el('020100'), 'i'), 0n);
    assert.equal(readInteger(el('02020080'), 'i'), 128n);
    assert.equal(readInteger(el('0201ff'), 'i'), -1n);
    assert.equal(readInteger(el('02020100'), 'i'), 256n);
    assert.equal(readInteger(el('020900ffffffffffffffff'), 'i'), 2n ** 64n - 1n);
    assert.throws(() => readInteger(el('0200'), 'i'), /empty INTEGER/);
    assert.throws(() => readInteger(el('0202007f'), 'i'), /non-minimal/);
    assert.throws(() => readInteger(el('0202ff80'), 'i'), /non-minimal/);
  });

  it('accepts only 0x00 and 0xFF as BOOLEAN, and empty NULL', () => {
    assert.equal(readBoolean(el('0101ff'), 'b'), true);
    assert.equal(readBoolean(el('010100'), 'b'), false);
    assert.throws(() => readBoolean(el('010101'), 'b'), /not a DER BOOLEAN/);
    assert.throws(() => readBoolean(el('01020000'), 'b'), /not a DER BOOLEAN/);
    readNull(el('0500'), 'n');
    assert.throws(() => readNull(el('050100'), 'n'), /NULL with contents/);
  });

  it('decodes OBJECT IDENTIFIERs and refuses padded or truncated arcs', () => {
    assert.equal(readOid(el('06092a864886f70d010702'), 'o'), '1.2.840.113549.1.7.2');
    assert.equal(readOid(el('0603550403'), 'o'), '2.5.4.3');
    assert.equal(readOid(el('0603883703'), 'o'), '2.999.3');
    assert.throws(() => readOid(el('0600'), 'o'), /empty/);
    assert.throws(() => readOid(el('0603 2a8001'), 'o'), /non-minimal/);
    assert.throws(() => readOid(el('0602 2a86'), 'o'), /truncated/);
  });

  it('reads a UUID OID (2.25, a 128-bit arc) but refuses subidentifiers too long to be real, quickly', () => {
    // X.667: 2.25.<UUID as a 128-bit integer>, the longest arcs seen in practice (19 octets).
    const uuid = 0xf81d4fae7dec11d0a76500a0c91e6bf6n;
    const arc: number[] = [];
    for (let v = uuid; v > 0n; v >>= 7n) arc.unshift(Number(v & 0x7fn) | (arc.length ? 0x80 : 0));
    assert.equal(readOid(decodeDer(Uint8Array.from([0x06, 1 + arc.length, 0x69, ...arc])), 'o'), `2.25.${uuid}`);
    // A 200 KB subidentifier made decoding superlinear (BigInt shifts and decimal conversion):
    // seconds per OID, and an OID is read wherever a DER value names a type.
    const n = 200_000;
    const body = new Uint8Array(n).fill(0xff);
    body[n - 1] = 0x7f;
    const huge = Uint8Array.from([0x06, 0x83, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff, ...body]);
    const t = performance.now();
    assert.throws(() => readOid(decodeDer(huge), 'o'), (err: unknown) => err instanceof DerError && /too long/.test(err.message));
    assert.ok(performance.now() - t < 1000, `took ${Math.round(performance.now() - t)} ms`);
  });

  it('reads BIT STRINGs, refusing set unused bits and bad counts', () => {
    const ku = readBitString(el('03020184'), 'ku');
    assert.deepEqual(bitsSet(ku), [0, 5]);
    assert.deepEqual(bitsSet(readBitString(el('030206c0'), 'ku')), [0, 1]);
    assert.throws(() => readBitString(el('030207c0'), 'ku'), /unused bits are not zero/);
    assert.throws(() => readBitString(el('03020880'), 'ku'), /unused-bits count/);
    assert.throws(() => readBitString(el('030101'), 'ku'), /unused-bits count/);
    assert.throws(() => readBitString(el('0300'), 'ku'), /empty/);
  });

  it('reads UTCTime and GeneralizedTime in their DER forms only', () => {
    const utc = (s: string) => Uint8Array.from([TAG.UTC_TIME, s.length, ...Buffer.from(s)]);
    const gen = (s: string) => Uint8Array.from([TAG.GENERALIZED_TIME, s.length, ...Buffer.from(s)]);
    assert.equal(readUtcTime(decodeDer(utc('250311085208Z')), 't').toISOString(), '2025-03-11T08:52:08.000Z');
    assert.equal(readUtcTime(decodeDer(utc('500101000000Z')), 't').toISOString(), '1950-01-01T00:00:00.000Z');
    assert.equal(readUtcTime(decodeDer(utc('491231235959Z')), 't').toISOString(), '2049-12-31T23:59:59.000Z');
    assert.throws(() => readUtcTime(decodeDer(utc('2503110852Z')), 't'), /not a DER UTCTime/);
    assert.throws(() => readUtcTime(decodeDer(utc('250311085208+0100')), 't'), /not a DER UTCTime/);
    assert.throws(() => readUtcTime(decodeDer(utc('251311085208Z')), 't'), /invalid date/);
    assert.throws(() => readUtcTime(decodeDer(utc('250230085208Z')), 't'), /invalid date/);
    assert.equal(readGeneralizedTime(decodeDer(gen('20250509115855Z')), 't').toISOString(), '2025-05-09T11:58:55.000Z');
    assert.equal(readGeneralizedTime(decodeDer(gen('20250509115855.123Z')), 't').toISOString(), '2025-05-09T11:58:55.123Z');
    assert.equal(readGeneralizedTime(decodeDer(gen('20250509115855.5Z')), 't').toISOString(), '2025-05-09T11:58:55.500Z');
    assert.throws(() => readGeneralizedTime(decodeDer(gen('20250509115855.50Z')), 't'), /not a DER GeneralizedTime/);
    assert.throws(() => readGeneralizedTime(decodeDer(gen('20250509115855.Z')), 't'), /not a DER GeneralizedTime/);
    assert.throws(() => readGeneralizedTime(decodeDer(gen('20250509115855')), 't'), /not a DER GeneralizedTime/);
    // RFC 5280 §4.1.2.5.2: no fractions in certificate times.
    assert.throws(() => readTime(decodeDer(gen('20250509115855.5Z')), 't'), /not a DER GeneralizedTime/);
    assert.throws(() => readTime(el('0500'), 't'), /not a Time/);
  });

  it('decodes the string types names use', () => {
    assert.equal(stringValue(el('0c03 e282ac')), '€');
    assert.equal(stringValue(el('1302 5553')), 'US');
    assert.equal(stringValue(el('1e04 00410042')), 'AB');
    assert.equal(stringValue(el('1c04 0001f600')), '\u{1f600}');
  });
});

describe('X.509 name comparison (RFC 5280 §7.1)', () => {
  const atv = (oid: string, tag: number, text: string) => {
    const t = Buffer.from(text, 'utf8');
    const value = [tag, t.length, ...t];
    const seq = [0x06, 0x03, ...hex(oid), ...value];
    return [0x30, seq.length, ...seq];
  };
  const rdn = (...atvs: number[][]) => {
    const body = atvs.flat();
    return [0x31, body.length, ...body];
  };
  const name = (...rdns: number[][]) => {
    const body = rdns.flat();
    return Uint8Array.from([0x30, body.length, ...body]);
  };
  const CN = '550403';
  const O = '55040a';

  it('matches the same text in another string type, case and insignificant spaces aside', () => {
    const a = name(rdn(atv(O, TAG.UTF8_STRING, 'Example  Org')), rdn(atv(CN, TAG.UTF8_STRING, 'Test TSA')));
    const b = name(rdn(atv(O, TAG.PRINTABLE_STRING, 'example org')), rdn(atv(CN, TAG.PRINTABLE_STRING, ' test tsa ')));
    assert.equal(namesEqual(a, b), true);
    assert.equal(nameToString(a), 'O=Example  Org, CN=Test TSA');
  });

  it('tells apart other values, other attribute types, other order and extra RDNs', () => {
    const a = name(rdn(atv(O, TAG.UTF8_STRING, 'Org')), rdn(atv(CN, TAG.UTF8_STRING, 'TSA')));
    assert.equal(namesEqual(a, name(rdn(atv(O, TAG.UTF8_STRING, 'Org')), rdn(atv(CN, TAG.UTF8_STRING, 'TSB')))), false);
    assert.equal(namesEqual(a, name(rdn(atv(O, TAG.UTF8_STRING, 'Org')), rdn(atv(O, TAG.UTF8_STRING, 'TSA')))), false);
    assert.equal(namesEqual(a, name(rdn(atv(CN, TAG.UTF8_STRING, 'TSA')), rdn(atv(O, TAG.UTF8_STRING, 'Org')))), false);
    assert.equal(namesEqual(a, name(rdn(atv(O, TAG.UTF8_STRING, 'Org')), rdn(atv(CN, TAG.UTF8_STRING, 'TSA')), rdn(atv(CN, TAG.UTF8_STRING, 'x')))), false);
    // A multi-valued RDN is not the same as the two RDNs.
    assert.equal(namesEqual(a, name(rdn(atv(O, TAG.UTF8_STRING, 'Org'), atv(CN, TAG.UTF8_STRING, 'TSA')))), false);
    assert.equal(namesEqual(a, hex('3003 0500')), false);
  });

  it('compares the attributes of a multi-valued RDN as a set, counting repeats', () => {
    const a = name(rdn(atv(O, TAG.UTF8_STRING, 'Org'), atv(CN, TAG.UTF8_STRING, 'TSA')));
    assert.equal(namesEqual(a, name(rdn(atv(CN, TAG.PRINTABLE_STRING, 'tsa'), atv(O, TAG.UTF8_STRING, 'ORG')))), true);
    assert.equal(namesEqual(a, name(rdn(atv(O, TAG.UTF8_STRING, 'Org'), atv(O, TAG.UTF8_STRING, 'Org')))), false);
    assert.equal(namesEqual(name(rdn(atv(CN, TAG.UTF8_STRING, 'x'), atv(CN, TAG.UTF8_STRING, 'x'), atv(CN, TAG.UTF8_STRING, 'y'))), name(rdn(atv(CN, TAG.UTF8_STRING, 'x'), atv(CN, TAG.UTF8_STRING, 'y'), atv(CN, TAG.UTF8_STRING, 'y')))), false);
    // A string and a non-string value never match, even with the same bytes after the tag.
    assert.equal(namesEqual(name(rdn(atv(CN, TAG.UTF8_STRING, 'x'))), name(rdn(atv(CN, TAG.OCTET_STRING, 'x')))), false);
  });

  it('compares a multi-valued RDN of thousands of attributes in linear-logarithmic time', () => {
    // Names come from the token (the SignerInfo's issuer, embedded certificates): pairing each
    // attribute with a match by a linear scan took seconds for a 55 KB name.
    const k = 4000;
    const atvs = Array.from({ length: k }, (_, i) => atv(CN, TAG.UTF8_STRING, `value ${i}`));
    const len3 = (n: number) => [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
    const long = (parts: number[][]) => {
      const body = parts.flat();
      const inner = [0x31, ...len3(body.length), ...body];
      return Uint8Array.from([0x30, ...len3(inner.length), ...inner]);
    };
    const a = long(atvs);
    const b = long([...atvs].reverse());
    const c = long([...atvs.slice(1), atv(CN, TAG.UTF8_STRING, 'value 1')]);
    // CPU time of this process, not wall time: a loaded machine stretches the clock, not the work.
    // The quadratic pairing took seconds of CPU here; sorting takes a few milliseconds.
    const cpu = process.cpuUsage();
    assert.equal(namesEqual(a, b), true);
    assert.equal(namesEqual(a, c), false);
    const spent = process.cpuUsage(cpu);
    const ms = (spent.user + spent.system) / 1000;
    assert.ok(ms < 1000, `took ${Math.round(ms)} ms of CPU`);
  });
});
