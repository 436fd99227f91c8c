/**
 * The TrueType fonts the certificate embeds (DejaVu Sans, Bold and Mono from the npm package
 * dejavu-fonts-ttf: wide Unicode coverage, so text is not limited to WinAnsi, and free to embed).
 *
 * Read from node_modules here; in a Lambda bundle there is no node_modules, so the esbuild plugin
 * `inline-font-files` (infra/esbuild-plugins.cjs) replaces this module with one that imports the
 * same files with esbuild's binary loader. It reads FONT_FILES below: keep it a plain object of
 * string literals.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

export const FONT_FILES = {
  regular: 'dejavu-fonts-ttf/ttf/DejaVuSans.ttf',
  bold: 'dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf',
  mono: 'dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf',
} as const;

export type FontBytes = Record<keyof typeof FONT_FILES, Uint8Array>;

let loaded: Promise<FontBytes> | undefined;

/** The font files' bytes (read once per process). */
export function loadFontFiles(): Promise<FontBytes> {
  loaded ??= (async () => {
    const require = createRequire(import.meta.url);
    const entries = await Promise.all(
      Object.entries(FONT_FILES).map(async ([name, file]) => [name, new Uint8Array(await readFile(require.resolve(file)))] as const),
    );
    return Object.fromEntries(entries) as FontBytes;
  })();
  loaded.catch(() => (loaded = undefined));
  return loaded;
}
