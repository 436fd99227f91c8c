/**
 * PEM <-> DER conversion (RFC 7468 "textual encoding": a `-----BEGIN label-----` line, base64 of
 * the DER wrapped at 64 characters, and a matching `-----END label-----` line).
 */

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
// RFC 7468 §3: the body is base64 (RFC 4648 §4) with optional whitespace between lines.
const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;

/** One PEM block: its label (e.g. `CERTIFICATE`, `PRIVATE KEY`) and its DER bytes. */
export interface PemBlock {
  label: string;
  der: Uint8Array;
}

/**
 * Encodes DER as PEM with the given label (default `CERTIFICATE`), lines of 64 characters
 * (RFC 7468 §2), ending with a newline.
 */
export function derToPem(der: Uint8Array, label = 'CERTIFICATE'): string {
  const b64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/**
 * Every PEM block in `text`, in order; with `label`, only blocks with that label.
 * Text outside the blocks (e.g. OpenSSL's `subject=` lines) is ignored, as RFC 7468 §2 allows.
 * @throws Error when a block's body is not valid base64.
 */
export function pemBlocks(text: string, label?: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  for (const match of text.matchAll(PEM_BLOCK)) {
    const blockLabel = match[1] ?? '';
    if (label !== undefined && blockLabel !== label) continue;
    const body = (match[2] ?? '').replace(/\s+/g, '');
    if (!BASE64_BODY.test(body) || body.length % 4 !== 0) {
      throw new Error(`PEM block "${blockLabel}" is not valid base64`);
    }
    blocks.push({ label: blockLabel, der: new Uint8Array(Buffer.from(body, 'base64')) });
  }
  return blocks;
}

/**
 * DER of the first PEM block with `label` (default `CERTIFICATE`).
 * @throws Error when there is no such block.
 */
export function pemToDer(pem: string, label = 'CERTIFICATE'): Uint8Array {
  const first = pemBlocks(pem, label)[0];
  if (!first) throw new Error(`no PEM block "${label}" found`);
  return first.der;
}
