/**
 * A small baseline JPEG (ITU-T T.81), made here so that the C2PA tests need no image tool and no
 * binary fixture of unknown origin: a grey-scale picture of flat 8×8 tiles. Each tile is one
 * block whose only coefficient is its DC one, so the encoder is a Huffman coder of DC
 * differences (the standard luminance DC table of Annex K.3) followed by an end-of-block code.
 * Any JPEG decoder shows it; C2PA's builder and reader treat it as any photo (they read its
 * segments, not its pixels).
 */

/** Table K.3: the number of luminance DC codes of each length 1…16, and the categories they code. */
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALUES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/** One AC code is all a DC-only block needs: end of block (0x00), one bit long. */
const AC_BITS = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const AC_VALUES = [0x00];
const QUANT = 16;

/** The canonical Huffman codes of a table (T.81 Annex C): value → [code, length]. */
function huffmanCodes(bits: number[], values: number[]): Map<number, [number, number]> {
  const codes = new Map<number, [number, number]>();
  let code = 0;
  let k = 0;
  for (let length = 1; length <= 16; length++) {
    for (let i = 0; i < (bits[length - 1] ?? 0); i++) codes.set(values[k++] ?? 0, [code++, length]);
    code <<= 1;
  }
  return codes;
}

class BitWriter {
  private readonly bytes: number[] = [];
  private acc = 0;
  private count = 0;
  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      if (++this.count === 8) this.flushByte();
    }
  }
  private flushByte(): void {
    this.bytes.push(this.acc);
    if (this.acc === 0xff) this.bytes.push(0x00); // byte stuffing (T.81 F.1.2.3)
    this.acc = 0;
    this.count = 0;
  }
  /** The entropy-coded data, the last byte padded with 1 bits. */
  finish(): number[] {
    if (this.count > 0) this.write(0xff, 8 - this.count);
    return this.bytes;
  }
}

function segment(marker: number, body: number[]): number[] {
  const length = body.length + 2;
  return [0xff, marker, length >> 8, length & 0xff, ...body];
}

/**
 * A grey-scale JPEG of `width`×`height` pixels (multiples of 8), whose tile at block (x, y) has
 * the grey level `shade(x, y)` (0…255). The default is a diagonal gradient with `seed` mixed in,
 * so that two calls with different seeds give two different photos.
 */
export function makeJpeg(options: { width?: number; height?: number; seed?: number; shade?: (x: number, y: number) => number } = {}): Uint8Array {
  const width = options.width ?? 64;
  const height = options.height ?? 48;
  if (width % 8 !== 0 || height % 8 !== 0) throw new Error('width and height must be multiples of 8');
  const seed = options.seed ?? 0;
  const shade = options.shade ?? ((x: number, y: number) => (x * 23 + y * 31 + seed * 7) % 256);
  const dc = huffmanCodes(DC_BITS, DC_VALUES);
  const ac = huffmanCodes(AC_BITS, AC_VALUES);
  const bits = new BitWriter();
  let previous = 0;
  for (let by = 0; by < height / 8; by++) {
    for (let bx = 0; bx < width / 8; bx++) {
      // A flat block of level L has the DC coefficient 8(L − 128) (T.81 A.3.3), quantised by QUANT.
      const value = Math.round((8 * (Math.max(0, Math.min(255, shade(bx, by))) - 128)) / QUANT);
      const diff = value - previous;
      previous = value;
      const category = diff === 0 ? 0 : Math.floor(Math.log2(Math.abs(diff))) + 1;
      const [code, length] = dc.get(category) ?? [0, 0];
      bits.write(code, length);
      // F.1.2.1.1: a negative difference is written as its one's complement in `category` bits.
      if (category > 0) bits.write(diff > 0 ? diff : diff - 1 + (1 << category), category);
      const [eob, eobLength] = ac.get(0x00) ?? [0, 0];
      bits.write(eob, eobLength);
    }
  }
  const jfif = [0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00];
  const bytes = [
    0xff, 0xd8, // SOI
    ...segment(0xe0, jfif), // APP0 JFIF 1.01, no density, no thumbnail
    ...segment(0xdb, [0x00, ...new Array<number>(64).fill(QUANT)]), // DQT: table 0, 8-bit, flat
    ...segment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]), // SOF0: one component
    ...segment(0xc4, [0x00, ...DC_BITS, ...DC_VALUES]), // DHT: DC table 0
    ...segment(0xc4, [0x10, ...AC_BITS, ...AC_VALUES]), // DHT: AC table 0
    ...segment(0xda, [1, 1, 0x00, 0, 63, 0]), // SOS: component 1, tables 0/0, Ss 0, Se 63, Ah/Al 0
    ...bits.finish(),
    0xff, 0xd9, // EOI
  ];
  return Uint8Array.from(bytes);
}
