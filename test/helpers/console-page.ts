import type { Browser, Page } from "playwright-core";
import { launchBrowser } from "./browser.js";
import type { TestServer } from "./server.js";

export interface ConsolePage {
  browser: Browser;
  page: Page;
  /** Uncaught page errors and Content-Security-Policy violations, for a last check. */
  problems: string[];
}

/** Chromium with a page for the console of `server`, not yet opened: the clipboard allowed (Copy buttons), confirmations accepted. */
export async function newConsolePage(server: TestServer): Promise<ConsolePage> {
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  // Bulk replays ask for confirmation.
  page.on("dialog", (dialog) => void dialog.accept());
  return { browser, page, problems };
}

/** Chromium signed in to the console of `server` with `token` (the admin token unless another is given). */
export async function openConsole(server: TestServer, token = server.adminToken): Promise<ConsolePage> {
  const opened = await newConsolePage(server);
  const { page } = opened;
  await page.goto(`${server.url}/console/`);
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return opened;
}
