import type { ArchiveStore } from '../../lib/evidence/archive-store.js';

/**
 * The archive store as one test file sees it: the archive_due index lists only the hashes this
 * file anchored. Test files share one stack and run at once; without this a pass of one file
 * would group another file's anchors (and its counts would depend on them). Everything else is
 * the real store.
 */
export function onlyMine(store: ArchiveStore, mine: ReadonlySet<string>): ArchiveStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'listUngrouped') {
        return async (limit: number) => (await target.listUngrouped(limit * 4)).filter((u) => mine.has(u.image_hash)).slice(0, limit);
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
