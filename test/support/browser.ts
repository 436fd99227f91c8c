import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium package (.ci/run installs it); CHROMIUM_PATH overrides. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// As .library/env/machines/node.md prescribes; Playwright itself gives every launch a new, empty
// --user-data-dir (it refuses that flag in launch()).
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Debian Chromium; never skipped: a missing browser fails and says what to install. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Headless Chromium not found at ${CHROMIUM}. Install it: apt-get update && apt-get install -y chromium (or set CHROMIUM_PATH).`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
