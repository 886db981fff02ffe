import path from "node:path";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, describe, expect } from "vitest";
import { storedMessageIds } from "../compat/support.js";
import { launchBrowser, type PageServer, servePage } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import { startFlakyProxy, type FlakyProxy, type ProxiedExchange } from "../helpers/flaky-proxy.js";

/**
 * The real `@segment/analytics-next`, bundled into a page on another origin
 * in Chromium, sending to Waypost through a proxy that fails every call's
 * first attempt. The SDK adds X-Retry-Count to each retry, in both its
 * standard and batching dispatchers, so the retry needs a new preflight that
 * asks for that header: Chromium itself enforces the answer, and a call is
 * delivered only if the preflight allowed what the SDK requested.
 */
const root = path.resolve(import.meta.dirname, "../..");

/**
 * The page's script. The settings normally fetched from Segment's CDN are
 * given inline (so the page never leaves loopback), pointing the Segment.io
 * integration at the proxy; remote metrics are off for the same reason.
 */
const pageScript = `
import { AnalyticsBrowser } from "@segment/analytics-next";
const params = new URLSearchParams(location.search);
const writeKey = params.get("writeKey");
const segment = { apiKey: writeKey, apiHost: params.get("apiHost"), protocol: "http" };
if (params.get("mode") === "batching") {
  // One timed flush sends all three calls. (With size 3 the third call
  // flushes at once while the timer set by the first two is pending; when
  // that timer finds the buffer empty mid-request, the SDK resets its
  // retry counter and the retry goes without X-Retry-Count.)
  segment.deliveryStrategy = { strategy: "batching", config: { size: 10, timeout: 1000 } };
}
const failures = [];
const [analytics] = await AnalyticsBrowser.load(
  { writeKey, cdnSettings: { integrations: { "Segment.io": segment }, metrics: { sampleRate: 0 } } },
  { disableClientPersistence: true },
);
analytics.on("error", (error) => failures.push(String(error.reason ?? error.code)));
const contexts = await Promise.all([
  analytics.identify("browser-user", { plan: "pro" }),
  analytics.track("Clicked Buy", { price: 12 }),
  analytics.page("Shop", "Checkout"),
]);
window.__result = { messageIds: contexts.map((ctx) => ctx.event.messageId), origin: location.origin, failures };
`;

const test = testWith();
let proxy: FlakyProxy;
let browser: Browser;
let pageServer: PageServer | undefined;

test.beforeAll(async ({ server }) => {
  const bundle = await build({
    stdin: { contents: pageScript, resolveDir: root, loader: "js" },
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  pageServer = await servePage(bundle.outputFiles[0]!.text);
  proxy = await startFlakyProxy(server.url);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await pageServer?.close();
});

/** Loads the page in a new browser context; resolves with the messageIds the SDK gave its three calls. */
async function sendFromPage(writeKey: string, mode: "standard" | "batching") {
  const context = await browser.newContext();
  const page = await context.newPage();
  const offLoopback: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith("http://127.0.0.1:")) offLoopback.push(request.url());
  });
  const apiHost = `${new URL(proxy.url).host}/v1`;
  await page.goto(`${pageServer!.origin}/?${new URLSearchParams({ writeKey, apiHost, mode })}`);
  await page.waitForFunction(() => (window as { __result?: unknown }).__result !== undefined, undefined, { timeout: 20_000 });
  const result = (await page.evaluate(() => (window as { __result?: unknown }).__result)) as {
    messageIds: string[];
    origin: string;
    failures: string[];
  };
  return { ...result, offLoopback, close: () => context.close() };
}

/** True once every id was in a POST that Waypost answered 200. */
function allDelivered(ids: string[]) {
  return (exchanges: ProxiedExchange[]) => {
    const accepted = new Set(exchanges.filter((e) => e.method === "POST" && e.status === 200).flatMap((e) => e.messageIds));
    return ids.every((id) => accepted.has(id));
  };
}

describe.each([
  { mode: "standard" as const, paths: ["/v1/i", "/v1/p", "/v1/t"] },
  { mode: "batching" as const, paths: ["/v1/b"] },
])("@segment/analytics-next in $mode mode, from a page on another origin", ({ mode, paths }) => {
  test("retries each failed call with X-Retry-Count, and every call is stored", async ({ server }) => {
    const source = await server.createSource(`segment browser ${mode}`);
    const before = proxy.exchanges.length;
    const sent = await sendFromPage(source.writeKey, mode);
    try {
      expect(sent.origin).not.toBe(new URL(proxy.url).origin);
      expect(sent.messageIds).toHaveLength(3);
      // The SDK's first retry comes after one to two seconds (standard) or
      // half a second (batching); 30 s leaves room for a loaded machine.
      await proxy.waitFor(allDelivered(sent.messageIds), 30_000);
      expect((await storedMessageIds(server, source.id)).sort()).toEqual([...sent.messageIds].sort());

      const exchanges = proxy.exchanges.slice(before);
      const posts = exchanges.filter((e) => e.method === "POST");
      expect([...new Set(posts.map((e) => e.path))].sort()).toEqual(paths);
      // Each call was refused once by the proxy and went through on a retry
      // that carried X-Retry-Count, after a preflight asking for it.
      expect(
        posts
          .filter((e) => e.status === 503)
          .flatMap((e) => e.messageIds)
          .sort(),
      ).toEqual([...sent.messageIds].sort());
      const retries = posts.filter((e) => e.status === 200);
      expect(retries.length).toBeGreaterThan(0);
      expect(retries.every((e) => Number(e.retryCount) >= 1)).toBe(true);
      const preflights = exchanges.filter((e) => e.method === "OPTIONS");
      expect(preflights.some((e) => e.status === 204 && /x-retry-count/i.test(e.requestedHeaders ?? ""))).toBe(true);
      expect(sent.failures).toEqual([]);
      expect(sent.offLoopback).toEqual([]);
    } finally {
      await sent.close();
    }
  }, 90_000);
});
