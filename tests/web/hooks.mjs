// The hooks most Chromium test files share: the built site served on 127.0.0.1 and one browser, closed at the end.
import { before, after } from 'node:test';
import { mkdirSync } from 'node:fs';
import { serve, launch, requireSite, requireCli, requirePlaywright, ARTIFACTS } from './lib.mjs';

// `use(server, browser)` receives them once they run.
export function withSiteAndBrowser(use) {
  let server;
  let browser;
  before(async () => {
    requireSite();
    requireCli();
    requirePlaywright();
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await serve();
    browser = await launch();
    use(server, browser);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
}
