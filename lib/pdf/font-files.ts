/**
 * The TrueType fonts the certificate embeds (DejaVu Sans, Bold and Mono from the npm package
 * dejavu-fonts-ttf: wide Unicode coverage, so text is not limited to WinAnsi, and free to embed).
 *
 * Read from node_modules here; in a Lambda bundle there is no node_modules, so the esbuild plugin
 * `inline-font-files` (infra/esbuild-plugins.cjs) replaces this module with one that imports the
 * same files with esbuild's binary loader. It reads FONT_FILES below: keep it a plain object of
 * string literals.
 */
import { packageFilesLoader } from '../package-files.js';

export const FONT_FILES = {
  regular: 'dejavu-fonts-ttf/ttf/DejaVuSans.ttf',
  bold: 'dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf',
  mono: 'dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf',
} as const;

export type FontBytes = Record<keyof typeof FONT_FILES, Uint8Array>;

/** The font files' bytes (read once per process). */
export const loadFontFiles: () => Promise<FontBytes> = packageFilesLoader(FONT_FILES, (bytes) => new Uint8Array(bytes));
