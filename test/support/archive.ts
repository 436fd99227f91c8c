import type { ArchiveStore, RenewalDue } from '../../lib/evidence/archive-store.js';

/**
 * The archive store as one test file sees it: the indexes list only this file's work (the
 * archive_due index: the hashes it anchored; the renewal_due index, whether read up to now or
 * page by page for a retired TSA certificate: the groups they joined, their own records and
 * digest offers). Test files share one stack and run at once; without this a pass
 * of one file would group or renew another file's records (and its counts would depend on them).
 * Every read and write is the real store's. `groups` collects the groups this file's hashes joined:
 * pass the same set to the stores of one file's later processes (a store built again after
 * resetCoreDeps) so that they still count those groups as the file's.
 */
export function onlyMine(store: ArchiveStore, mine: ReadonlySet<string>, groups = new Set<string>()): ArchiveStore {
  const isMine = (d: RenewalDue) => (d.kind === 'group' ? groups.has(d.id) : mine.has(d.image_hash));
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'listUngrouped') {
        return async (limit: number) => (await target.listUngrouped(limit * 4)).filter((u) => mine.has(u.image_hash)).slice(0, limit);
      }
      if (prop === 'listRenewalsDue') {
        return async (nowIso: string, limit: number) => (await target.listRenewalsDue(nowIso, limit * 4)).filter(isMine).slice(0, limit);
      }
      if (prop === 'listRenewalsUpTo') {
        // A page as read (its cursor included), less what is not this file's.
        return async (untilIso: string, limit: number, after?: string) => {
          const page = await target.listRenewalsUpTo(untilIso, limit, after);
          return { ...page, due: page.due.filter(isMine) };
        };
      }
      if (prop === 'join') {
        return async (imageHash: string, groupId: string, path: Uint8Array[][]) => {
          if (mine.has(imageHash)) groups.add(groupId);
          return target.join(imageHash, groupId, path);
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
