/**
 * Signs a pdf-lib document with a PAdES baseline signature (B-T: ETSI.CAdES.detached with a
 * signature timestamp). @signpdf/placeholder-pdf-lib adds the signature dictionary and its
 * /ByteRange and /Contents placeholders, @signpdf/signpdf computes the byte ranges and puts the
 * CMS in place; the CMS itself is ours (lib/crypto/pdf-sign/cades.ts), so that the key can stay
 * in KMS and the timestamp comes from our own TSA.
 */
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { SUBFILTER_ETSI_CADES_DETACHED, Signer } from '@signpdf/utils';
import type { PDFDocument } from 'pdf-lib';
import { type PdfSigningIdentity, type SignatureTimestamper, buildCadesDetached } from '../crypto/pdf-sign/cades.js';

/** The room left for the CMS in /Contents (bytes): two certificates, the signature and a token with its two certificates fit in under 6 KB. */
const SIGNATURE_BYTES = 12_288;

class CadesSigner extends Signer {
  constructor(
    private readonly identity: PdfSigningIdentity,
    private readonly timestamp: SignatureTimestamper | undefined,
  ) {
    super();
  }

  override async sign(pdfBuffer: Buffer): Promise<Buffer> {
    return Buffer.from(await buildCadesDetached(pdfBuffer, this.identity, this.timestamp));
  }
}

/** What the signature dictionary says about the signer (shown by PDF readers and pdfsig). */
export interface PdfSignatureInfo {
  name: string;
  reason: string;
  location: string;
  contactInfo: string;
  signingTime: Date;
}

/** Adds the signature placeholder, saves the document and signs it; returns the signed PDF. */
export async function signPdf(doc: PDFDocument, info: PdfSignatureInfo, identity: PdfSigningIdentity, timestamp?: SignatureTimestamper): Promise<Uint8Array> {
  pdflibAddPlaceholder({
    pdfDoc: doc,
    reason: info.reason,
    contactInfo: info.contactInfo,
    name: info.name,
    location: info.location,
    signingTime: info.signingTime,
    signatureLength: SIGNATURE_BYTES,
    subFilter: SUBFILTER_ETSI_CADES_DETACHED,
  });
  // No object streams: @signpdf finds the /ByteRange placeholder in the file's plain bytes.
  const unsigned = await doc.save({ useObjectStreams: false });
  return new Uint8Array(await new SignPdf().sign(Buffer.from(unsigned), new CadesSigner(identity, timestamp)));
}
