/**
 * Reads the files attached to a PDF (the /EmbeddedFiles name tree, PDF 32000-1 §7.11.4) with
 * pdf-lib's object model: the evidence CLI takes the receipt out of a certificate with it.
 * pdf-lib writes attachments but has no reader for them, so the walk over the name tree is ours.
 */
import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFRawStream, PDFString, decodePDFRawStream } from 'pdf-lib';

export interface PdfAttachment {
  name: string;
  bytes: Uint8Array;
}

/** Every embedded file of the PDF, in name-tree order. */
export async function readAttachments(pdf: Uint8Array): Promise<PdfAttachment[]> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const names = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict);
  const tree = names?.lookupMaybe(PDFName.of('EmbeddedFiles'), PDFDict);
  if (!tree) return [];
  const out: PdfAttachment[] = [];
  const visit = (node: PDFDict, depth: number) => {
    if (depth > 16) return;
    const kids = node.lookupMaybe(PDFName.of('Kids'), PDFArray);
    for (let i = 0; kids && i < kids.size(); i++) {
      const kid = kids.lookupMaybe(i, PDFDict);
      if (kid) visit(kid, depth + 1);
    }
    const pairs = node.lookupMaybe(PDFName.of('Names'), PDFArray);
    for (let i = 0; pairs && i + 1 < pairs.size(); i += 2) {
      const key = pairs.lookup(i);
      const spec = pairs.lookupMaybe(i + 1, PDFDict);
      const ef = spec?.lookupMaybe(PDFName.of('EF'), PDFDict);
      const stream = ef?.lookup(PDFName.of('F'));
      if (!(stream instanceof PDFRawStream)) continue;
      const name = key instanceof PDFString || key instanceof PDFHexString ? key.decodeText() : `attachment-${i / 2}`;
      out.push({ name, bytes: decodePDFRawStream(stream).decode() });
    }
  };
  visit(tree, 0);
  return out;
}
