import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { type HttpService, startHttpService } from './http-server.js';
import { useStack } from './stack.js';

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

/**
 * For a page test file: the stack, the service over real HTTP and a browser, started in before()
 * and stopped in after(). The returned object is filled in by the time the tests run.
 */
export function useServiceAndBrowser(): { service: HttpService; browser: Browser } {
  const parts = {} as { service: HttpService; browser: Browser };
  before(async () => {
    await useStack();
    parts.service = await startHttpService();
    parts.browser = await launchChromium();
  });
  after(async () => {
    await parts.browser?.close();
    await parts.service?.close();
  });
  return parts;
}
