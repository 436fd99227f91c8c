/**
 * Reads the signature of a signed PDF (PDF 32000-1 §12.8.1): the signature field's dictionary
 * (/ByteRange, /Contents, /M), found with pdf-lib's object model, and the bytes it covers. What
 * the CMS in /Contents proves is lib/crypto/pdf-sign/verify.ts's; this module only says what is
 * signed and whether that is the whole file.
 */
import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFNumber, PDFString } from 'pdf-lib';
import { decodeDerPrefix } from '../crypto/tsa/der.js';

export interface PdfSignature {
  /** /ByteRange: [start, length, start, length], the two ranges around /Contents. */
  byteRange: [number, number, number, number];
  /** The bytes the signature covers: the two ranges of the file, concatenated. */
  signedBytes: Uint8Array;
  /** The DER CMS of /Contents, without the zero padding of its placeholder. */
  cms: Uint8Array;
  /** /M, the signing time the signature dictionary states (it lies inside the signed bytes). */
  statedTime?: Date;
  /**
   * Why the signed ranges are not exactly the whole file but /Contents, when they are not (a
   * revision appended after signing, ranges that leave bytes out); undefined: the whole file.
   */
  notWholeFile?: string;
}

/** The signature fields' dictionaries, in field order (nested fields included). */
function signatureDictionaries(doc: PDFDocument): PDFDict[] {
  const acroForm = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
  const fields = acroForm?.lookupMaybe(PDFName.of('Fields'), PDFArray);
  const out: PDFDict[] = [];
  const visit = (field: PDFDict, depth: number) => {
    if (depth > 16) return;
    const value = field.lookupMaybe(PDFName.of('V'), PDFDict);
    if (field.lookupMaybe(PDFName.of('FT'), PDFName) === PDFName.of('Sig') && value) out.push(value);
    const kids = field.lookupMaybe(PDFName.of('Kids'), PDFArray);
    for (let i = 0; kids && i < kids.size(); i++) {
      const kid = kids.lookupMaybe(i, PDFDict);
      if (kid) visit(kid, depth + 1);
    }
  };
  for (let i = 0; fields && i < fields.size(); i++) {
    const field = fields.lookupMaybe(i, PDFDict);
    if (field) visit(field, 0);
  }
  return out;
}

/**
 * The signatures of the PDF, in field order (an evidence certificate has one).
 * @throws Error when the file is not a PDF, or a signature dictionary is malformed.
 */
export async function readPdfSignatures(pdf: Uint8Array): Promise<PdfSignature[]> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  return signatureDictionaries(doc).map((sig) => readSignature(pdf, sig));
}

function readSignature(pdf: Uint8Array, sig: PDFDict): PdfSignature {
  const range = sig.lookupMaybe(PDFName.of('ByteRange'), PDFArray);
  const numbers = range?.asArray().map((n) => (n instanceof PDFNumber ? n.asNumber() : Number.NaN)) ?? [];
  if (numbers.length !== 4 || !numbers.every((n) => Number.isSafeInteger(n) && n >= 0)) throw new Error('the signature has no /ByteRange of four offsets');
  const [start1, length1, start2, length2] = numbers as [number, number, number, number];
  const end1 = start1 + length1;
  const end2 = start2 + length2;
  if (end1 > start2 || end2 > pdf.byteLength) throw new Error('the /ByteRange lies outside the file');
  const contents = sig.lookupMaybe(PDFName.of('Contents'), PDFHexString);
  if (!contents) throw new Error('the signature has no /Contents');
  // The gap between the ranges must be /Contents itself, `<hex>`: the signature then covers every
  // byte of this revision but its own value.
  const gap = Buffer.from(pdf.subarray(end1, start2)).toString('latin1');
  if (!/^<[0-9a-fA-F]*>$/.test(gap) || !Buffer.from(gap.slice(1, -1), 'hex').equals(Buffer.from(contents.asBytes()))) {
    throw new Error('the bytes the /ByteRange leaves out are not the signature\'s /Contents');
  }
  const { element, rest } = decodeDerPrefix(contents.asBytes(), 'the signature /Contents');
  if (rest.some((b) => b !== 0)) throw new Error('the signature /Contents holds more than one DER value');
  const m = sig.lookupMaybe(PDFName.of('M'), PDFString, PDFHexString);
  let statedTime: Date | undefined;
  try {
    statedTime = m?.decodeDate();
  } catch {
    statedTime = undefined;
  }
  const notWholeFile =
    start1 !== 0
      ? `the signed ranges start at byte ${start1}, not at the file's start`
      : end2 !== pdf.byteLength
        ? `the file has ${pdf.byteLength - end2} bytes after the signed ranges (a revision added after signing)`
        : undefined;
  return {
    byteRange: [start1, length1, start2, length2],
    signedBytes: Buffer.concat([pdf.subarray(start1, end1), pdf.subarray(start2, end2)]),
    cms: Uint8Array.from(element.der),
    ...(statedTime && !Number.isNaN(statedTime.getTime()) ? { statedTime } : {}),
    ...(notWholeFile ? { notWholeFile } : {}),
  };
}
