import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { lazy } from './memo.js';

/**
 * Reads files of npm packages named in a table (`{ key: 'package/path/file' }`), once per
 * process. The modules that call it (lib/pdf/font-files.ts, lib/web/docs-files.ts) are replaced in
 * a Lambda bundle by ones that carry the bytes (infra/esbuild-plugins.cjs inlinePackageFiles).
 */
export function packageFilesLoader<K extends string, T>(table: Record<K, string>, decode: (bytes: Buffer) => T): () => Promise<Record<K, T>> {
  return lazy(async () => {
    const require = createRequire(import.meta.url);
    const entries = await Promise.all(Object.entries<string>(table).map(async ([name, file]) => [name, decode(await readFile(require.resolve(file)))] as const));
    return Object.fromEntries(entries) as Record<K, T>;
  });
}
