/**
 * Lays out the evidence certificate (its model: lib/pdf/certificate-model.ts, built by lib/evidence/certificate.ts) on A4 pages with pdf-lib:
 * embedded, subset TrueType fonts (text extracts with pdftotext), the QR code from the `qrcode`
 * package's module matrix, and the receipt attached as a PDF/A-3 style associated file
 * (/AF, AFRelationship /Data).
 *
 * Written here, by hand: the line breaking and page flow (pdf-lib draws text at a position and has
 * no layout engine), and the drawing of the QR modules as filled squares (the matrix is qrcode's).
 */
import fontkit from '@pdf-lib/fontkit';
import { AFRelationship, PDFDocument, type PDFFont, type PDFPage, rgb } from 'pdf-lib';
import QRCode from 'qrcode';
import type { CertificateModel, CertificateProof, ProofStatus } from './certificate-model.js';
import { loadFontFiles } from './font-files.js';

const A4: [number, number] = [595.28, 841.89];
const MARGIN = 48;
const WIDTH = A4[0] - 2 * MARGIN;
const INK = rgb(0.11, 0.13, 0.17);
const MUTED = rgb(0.38, 0.41, 0.46);
const NAVY = rgb(0.09, 0.2, 0.36);
const RULE = rgb(0.82, 0.84, 0.87);
const CODE_BG = rgb(0.95, 0.96, 0.97);
const TONES = {
  ok: { fill: rgb(0.9, 0.96, 0.91), edge: rgb(0.16, 0.5, 0.24), text: rgb(0.1, 0.36, 0.16) },
  pending: { fill: rgb(1, 0.96, 0.86), edge: rgb(0.72, 0.52, 0.05), text: rgb(0.48, 0.33, 0.02) },
  registered: { fill: rgb(0.92, 0.94, 0.98), edge: rgb(0.2, 0.33, 0.6), text: rgb(0.13, 0.23, 0.45) },
  bad: { fill: rgb(0.99, 0.91, 0.9), edge: rgb(0.7, 0.15, 0.12), text: rgb(0.55, 0.1, 0.08) },
} as const;
const STATUS_TONE: Record<ProofStatus, keyof typeof TONES> = { verified: 'ok', pending: 'pending', failed: 'bad' };
const STATUS_LABEL: Record<ProofStatus, string> = { verified: 'CHECKS OUT', pending: 'PENDING', failed: 'DOES NOT CHECK OUT' };

/** Who issues the certificate (the header and the document's metadata). */
export interface CertificateIssuer {
  name: string;
  url: string;
}

interface Fonts {
  regular: PDFFont;
  bold: PDFFont;
  mono: PDFFont;
}

/** A cursor over the pages: text flows down and onto a new page when the space runs out. */
class Flow {
  page: PDFPage;
  y: number;
  readonly pages: PDFPage[] = [];

  constructor(
    private readonly doc: PDFDocument,
    readonly fonts: Fonts,
    private readonly footer: (page: PDFPage, index: number, count: number) => void,
  ) {
    this.page = this.addPage();
    this.y = A4[1] - MARGIN;
  }

  private addPage(): PDFPage {
    const page = this.doc.addPage(A4);
    this.pages.push(page);
    return page;
  }

  /** Makes room for `height` points, starting a new page if needed. */
  need(height: number): void {
    if (this.y - height >= MARGIN + 28) return;
    this.page = this.addPage();
    this.y = A4[1] - MARGIN;
  }

  /** Word-wrapped text; returns the lines drawn. */
  text(text: string, opts: { font?: PDFFont; size?: number; color?: ReturnType<typeof rgb>; x?: number; width?: number; gap?: number } = {}): void {
    const font = opts.font ?? this.fonts.regular;
    const size = opts.size ?? 9.5;
    const x = opts.x ?? MARGIN;
    const lines = wrap(text, font, size, opts.width ?? WIDTH - (x - MARGIN));
    const lead = size * 1.35;
    for (const line of lines) {
      this.need(lead);
      this.page.drawText(line, { x, y: this.y - size, size, font, color: opts.color ?? INK });
      this.y -= lead;
    }
    this.y -= opts.gap ?? 0;
  }

  finish(): void {
    this.pages.forEach((p, i) => this.footer(p, i, this.pages.length));
  }
}

/** Breaks text into lines that fit `width`: at spaces, and inside words too long for a line (hashes, URLs). */
function wrap(text: string, font: PDFFont, size: number, width: number): string[] {
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      const candidate = line ? `${line} ${word}` : word;
      if (font.widthOfTextAtSize(candidate, size) <= width) {
        line = candidate;
        continue;
      }
      if (line) out.push(line);
      line = '';
      let rest = word;
      while (font.widthOfTextAtSize(rest, size) > width) {
        let n = rest.length;
        while (n > 1 && font.widthOfTextAtSize(rest.slice(0, n), size) > width) n--;
        out.push(rest.slice(0, n));
        rest = rest.slice(n);
      }
      line = rest;
    }
    out.push(line);
  }
  return out;
}

function heading(flow: Flow, text: string): void {
  flow.need(40);
  flow.y -= 10;
  flow.page.drawText(text, { x: MARGIN, y: flow.y - 12, size: 12, font: flow.fonts.bold, color: NAVY });
  flow.y -= 17;
  flow.page.drawLine({ start: { x: MARGIN, y: flow.y }, end: { x: MARGIN + WIDTH, y: flow.y }, thickness: 0.6, color: RULE });
  flow.y -= 6;
}

/** Label: value rows, the value in monospace (precise values an expert copies). */
function facts(flow: Flow, rows: [string, string][], labelWidth = 118): void {
  const size = 8.5;
  for (const [label, value] of rows) {
    const lines = wrap(value, flow.fonts.mono, size, WIDTH - labelWidth - 8);
    flow.need(lines.length * size * 1.4 + 2);
    flow.page.drawText(label, { x: MARGIN + 8, y: flow.y - size, size, font: flow.fonts.regular, color: MUTED });
    for (const line of lines) {
      flow.page.drawText(line, { x: MARGIN + labelWidth, y: flow.y - size, size, font: flow.fonts.mono, color: INK });
      flow.y -= size * 1.4;
    }
    flow.y -= 1.5;
  }
}

/** Commands in monospace on a grey band. */
function commands(flow: Flow, lines: string[]): void {
  const size = 7.3;
  const lead = size * 1.38;
  const inner = WIDTH - 24;
  const wrapped = lines.flatMap((l) => wrap(`$ ${l}`, flow.fonts.mono, size, inner).map((w, i) => (i === 0 ? w : `  ${w}`)));
  flow.need(Math.min(wrapped.length, 4) * lead + 8);
  let i = 0;
  while (i < wrapped.length) {
    const room = Math.max(1, Math.floor((flow.y - (MARGIN + 28) - 8) / lead));
    const chunk = wrapped.slice(i, i + room);
    const height = chunk.length * lead + 7;
    flow.page.drawRectangle({ x: MARGIN + 8, y: flow.y - height, width: WIDTH - 8, height, color: CODE_BG });
    let y = flow.y - 4;
    for (const line of chunk) {
      flow.page.drawText(line, { x: MARGIN + 14, y: y - size, size, font: flow.fonts.mono, color: INK });
      y -= lead;
    }
    flow.y -= height + 4;
    i += chunk.length;
    if (i < wrapped.length) flow.need(flow.y);
  }
}

function banner(flow: Flow, tone: keyof typeof TONES, headline: string, text: string, width = WIDTH): void {
  const t = TONES[tone];
  const body = wrap(text, flow.fonts.regular, 9.5, width - 28);
  const height = 24 + body.length * 12.8 + 8;
  flow.need(height);
  flow.page.drawRectangle({ x: MARGIN, y: flow.y - height, width, height, color: t.fill, borderColor: t.edge, borderWidth: 1 });
  flow.page.drawRectangle({ x: MARGIN, y: flow.y - height, width: 5, height, color: t.edge });
  flow.page.drawText(headline, { x: MARGIN + 16, y: flow.y - 18, size: 11.5, font: flow.fonts.bold, color: t.text });
  let y = flow.y - 24;
  for (const line of body) {
    flow.page.drawText(line, { x: MARGIN + 16, y: y - 12, size: 9.5, font: flow.fonts.regular, color: INK });
    y -= 12.8;
  }
  flow.y -= height + 8;
}

function proof(flow: Flow, p: CertificateProof, n: number): void {
  flow.need(90);
  flow.y -= 6;
  const t = TONES[STATUS_TONE[p.status]];
  const label = STATUS_LABEL[p.status];
  const labelWidth = flow.fonts.bold.widthOfTextAtSize(label, 7.5) + 12;
  flow.page.drawText(`${n}. ${p.title}`, { x: MARGIN, y: flow.y - 11, size: 11, font: flow.fonts.bold, color: INK });
  flow.page.drawRectangle({ x: MARGIN + WIDTH - labelWidth, y: flow.y - 13, width: labelWidth, height: 14, color: t.fill, borderColor: t.edge, borderWidth: 0.8 });
  flow.page.drawText(label, { x: MARGIN + WIDTH - labelWidth + 6, y: flow.y - 9.5, size: 7.5, font: flow.fonts.bold, color: t.text });
  flow.y -= 18;
  flow.text(p.proves, { size: 9.5, gap: 1 });
  flow.text(p.statusText, { size: 8.8, color: t.text, gap: 3 });
  facts(flow, p.facts);
  flow.y -= 2;
  flow.text(p.check.intro, { size: 8.5, color: MUTED, gap: 1 });
  commands(flow, p.check.commands);
}

async function drawQr(page: PDFPage, text: string, x: number, y: number, size: number): Promise<void> {
  // The matrix is qrcode's (encoding, error correction, masking); only its modules are drawn here.
  const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const n = qr.modules.size;
  const quiet = 4;
  const cell = size / (n + 2 * quiet);
  page.drawRectangle({ x, y, width: size, height: size, color: rgb(1, 1, 1) });
  for (let row = 0; row < n; row++) {
    let col = 0;
    while (col < n) {
      if (!qr.modules.get(row, col)) {
        col++;
        continue;
      }
      let end = col;
      while (end + 1 < n && qr.modules.get(row, end + 1)) end++;
      page.drawRectangle({
        x: x + (quiet + col) * cell,
        y: y + size - (quiet + row + 1) * cell,
        width: (end - col + 1) * cell + 0.02,
        height: cell + 0.02,
        color: rgb(0, 0, 0),
      });
      col = end + 1;
    }
  }
}

/** Builds the (unsigned) certificate document; sign it with lib/pdf/sign.ts. */
export async function renderCertificate(model: CertificateModel, issuer: CertificateIssuer): Promise<PDFDocument> {
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const files = await loadFontFiles();
  const [regular, bold, mono] = await Promise.all([
    doc.embedFont(files.regular, { subset: true }),
    doc.embedFont(files.bold, { subset: true }),
    doc.embedFont(files.mono, { subset: true }),
  ]);
  const fonts: Fonts = { regular, bold, mono };
  const issued = new Date(model.issued_at);
  doc.setTitle(`Evidence certificate ${model.image_hash}`);
  doc.setAuthor(issuer.name);
  doc.setCreator(issuer.name);
  doc.setProducer(`${issuer.name} (pdf-lib)`);
  doc.setSubject('SHA-256 evidence certificate with ML-DSA-65, RFC 3161 and ledger proofs');
  doc.setKeywords(['evidence', 'SHA-256', model.image_hash]);
  doc.setCreationDate(issued);
  doc.setModificationDate(issued);

  const attachedNames = [model.attachment.name, ...model.more.map((f) => f.name)].join(', ');
  const flow = new Flow(doc, fonts, (page, index, count) => {
    page.drawLine({ start: { x: MARGIN, y: MARGIN + 14 }, end: { x: MARGIN + WIDTH, y: MARGIN + 14 }, thickness: 0.5, color: RULE });
    const left = `Issued ${model.issued_at} by ${issuer.name} · digitally signed · proofs attached as ${attachedNames}`;
    page.drawText(wrap(left, regular, 7, WIDTH - 60)[0] ?? '', { x: MARGIN, y: MARGIN + 3, size: 7, font: regular, color: MUTED });
    const pageText = `Page ${index + 1} of ${count}`;
    page.drawText(pageText, { x: MARGIN + WIDTH - regular.widthOfTextAtSize(pageText, 7), y: MARGIN + 3, size: 7, font: regular, color: MUTED });
  });

  // Header band.
  const first = flow.page;
  first.drawRectangle({ x: 0, y: A4[1] - 86, width: A4[0], height: 86, color: NAVY });
  first.drawText('Evidence Certificate', { x: MARGIN, y: A4[1] - 46, size: 22, font: bold, color: rgb(1, 1, 1) });
  first.drawText(`${issuer.name}  ·  ${issuer.url}`, { x: MARGIN, y: A4[1] - 66, size: 9, font: regular, color: rgb(0.8, 0.86, 0.93) });
  const issuedText = `Issued ${model.issued_at.slice(0, 10)}`;
  first.drawText(issuedText, { x: A4[0] - MARGIN - bold.widthOfTextAtSize(issuedText, 10), y: A4[1] - 46, size: 10, font: bold, color: rgb(1, 1, 1) });
  flow.y = A4[1] - 86 - 18;

  banner(flow, model.verdict.tone, model.verdict.headline, model.verdict.text);

  // The file: fingerprint, times, QR code to the right.
  const qrSize = 112;
  const textWidth = WIDTH - qrSize - 16;
  const top = flow.y;
  heading(flow, 'The file');
  await drawQr(first, model.verify_url, MARGIN + WIDTH - qrSize, top - 22 - qrSize, qrSize);
  first.drawText('Scan to check online', { x: MARGIN + WIDTH - qrSize + 14, y: top - 22 - qrSize - 9, size: 7.5, font: regular, color: MUTED });
  flow.text('SHA-256 fingerprint of the file', { size: 8.5, color: MUTED, width: textWidth });
  flow.text(model.image_hash, { font: mono, size: 9.6, width: textWidth, gap: 3 });
  flow.text(
    'Only this fingerprint was ever sent to us, never the file itself. Anyone can compute it again from the original file (for example with "sha256sum photo.jpg"): if the result is the same, it is the same file, bit for bit; a change of a single pixel gives a completely different fingerprint.',
    { size: 9.2, width: textWidth, gap: 4 },
  );
  for (const [label, value] of model.times) flow.text(`${label}: ${value}`, { size: 9.2, width: textWidth });
  flow.text(`Online check: ${model.verify_url}`, { size: 8, color: MUTED, width: textWidth });
  flow.y = Math.min(flow.y, top - 22 - qrSize - 18);

  if (model.proofs.length > 0) {
    heading(flow, 'The proofs, and how to check each one without us');
    flow.text(
      `Each proof below is independent of the others. The commands use the attached ${attachedNames}; take ${model.more.length > 0 ? 'them' : 'it'} out of this PDF with: ${model.extract.join(' ; ')}`,
      { size: 8.8, color: MUTED, gap: 2 },
    );
    model.proofs.forEach((p, i) => proof(flow, p, i + 1));
  }
  if (model.absent.length > 0) {
    heading(flow, 'Proofs this file does not have');
    for (const line of model.absent) flow.text(`•  ${line}`, { size: 9.2 });
  }
  heading(flow, 'About this document');
  flow.text(
    `This certificate is signed by ${issuer.name} with a PAdES signature and a signature timestamp from its time-stamping authority: a PDF reader shows whether it was changed after issue (pdfsig certificate.pdf). The attached ${attachedNames} ${model.more.length > 0 ? 'hold' : 'holds'} every value above in machine-readable form; "evidence verify photo.jpg --certificate certificate.pdf" checks them offline.`,
    { size: 8.8, color: MUTED },
  );
  flow.finish();

  await doc.attach(new TextEncoder().encode(model.attachment.json), model.attachment.name, {
    mimeType: 'application/json',
    description: model.attachment.description,
    creationDate: issued,
    modificationDate: issued,
    afRelationship: AFRelationship.Data,
  });
  // Attached in the model's order, after receipt.json: the order its pdfdetach -save N commands name.
  for (const file of model.more) {
    await doc.attach(new TextEncoder().encode(file.json), file.name, {
      mimeType: 'application/json',
      description: file.description,
      creationDate: issued,
      modificationDate: issued,
      afRelationship: AFRelationship.Data,
    });
  }
  return doc;
}
