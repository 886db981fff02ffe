import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium (installed by .ci/run), never a downloaded browser. */
export const chromiumPath = process.env.WAYPOST_CHROMIUM ?? "/usr/bin/chromium";

/** A headless Chromium driven over CDP by playwright-core. */
export function launchBrowser(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium (or set WAYPOST_CHROMIUM)`);
  }
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A page on an origin of its own (another loopback port than the service's): an HTML shell that loads `script` as /page.js. */
export interface PageServer {
  /** http://127.0.0.1:PORT */
  origin: string;
  close(): Promise<void>;
}

export async function servePage(script: string): Promise<PageServer> {
  const html = '<!doctype html><title>shop</title><script type="module" src="/page.js"></script>';
  const server = http.createServer((req, res) => {
    const isScript = req.url === "/page.js";
    res.writeHead(200, { "content-type": isScript ? "text/javascript" : "text/html" });
    res.end(isScript ? script : html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
