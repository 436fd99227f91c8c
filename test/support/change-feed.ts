import { getConfig } from '../../lib/deps/core.js';
import { getDerivedStores } from '../../lib/deps/derived.js';
import { localChangeFeed } from '../../lib/local/change-feed.js';

/**
 * Applies every change of the evidence table the embedded dynalite's feed holds (statistics,
 * links' anchored marks), as `npm start` does every second and the evidence-stream Lambda in AWS:
 * a test that reads derived data calls this first, instead of waiting for a timer.
 */
export async function drainChangeFeed(): Promise<number> {
  return localChangeFeed(getConfig(), getDerivedStores()).drain();
}
