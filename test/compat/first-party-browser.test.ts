import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, expect } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * Segment's stock snippet (5.2.1, as Segment's docs publish it, in
 * test/fixtures/segment/) with only its host changed to Waypost's, on a page
 * of another loopback origin in Chromium: analytics.js, its settings and
 * its chunks come from Waypost, its calls go to Waypost, and nothing else
 * is requested. The page then asks for the first-party cookie, with and
 * without consent.
 */
const snippet = readFileSync(new URL("../fixtures/segment/snippet-5.2.1.html", import.meta.url), "utf8");

const test = testWith();
let browser: Browser;
let page: { origin: string; close(): Promise<void> };

/** The page: the snippet, then a track once analytics.js is ready, then the cookie call with the consent in the query. */
function pageHtml(waypost: string, writeKey: string): string {
  const stock = snippet.replaceAll("https://cdn.segment.com", waypost).replaceAll("YOUR_WRITE_KEY", writeKey);
  return `<!doctype html><html><head><title>shop</title>${stock}</head><body>
<script>
analytics.ready(function () {
  var anonymousId = analytics.user().anonymousId();
  analytics.track("Order Completed", { total: 12.5 }).then(function (ctx) {
    var consent = new URLSearchParams(location.search).get("consent");
    return fetch(${JSON.stringify(`${waypost}/v1/first-party/anonymous-id`)}, {
      method: "POST",
      credentials: "include",
      body: JSON.stringify({ anonymousId: anonymousId, context: { consent: { categoryPreferences: { Analytics: consent === "yes" } } } }),
    }).then(function (res) { return res.json(); }).then(function (answer) {
      window.__result = { messageId: ctx.event.messageId, anonymousId: anonymousId, answer: answer };
    });
  }).catch(function (error) { window.__result = { error: String(error) }; });
});
</script></body></html>`;
}

async function servePageHtml(html: () => string): Promise<{ origin: string; close(): Promise<void> }> {
  const pages = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(html());
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(pages.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => pages.close(() => resolve())),
  };
}

let writeKey = "";
test.beforeAll(async ({ server }) => {
  browser = await launchBrowser();
  page = await servePageHtml(() => pageHtml(server.url, writeKey));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await page?.close();
});

async function visit(server: TestServer, consent: "yes" | "no") {
  const context = await browser.newContext();
  const tab = await context.newPage();
  const requested: string[] = [];
  tab.on("request", (request) => requested.push(request.url()));
  await tab.goto(`${page.origin}/?consent=${consent}`);
  await tab.waitForFunction(() => (window as { __result?: unknown }).__result !== undefined, undefined, { timeout: 30_000 });
  const result = (await tab.evaluate(() => (window as { __result?: unknown }).__result)) as {
    error?: string;
    messageId: string;
    anonymousId: string;
    answer: { anonymousId: string; cookie: boolean };
  };
  const cookies = await context.cookies(server.url);
  await context.close();
  return { result, requested, cookies };
}

test("the stock snippet with only its host changed loads everything from Waypost, and its track is stored", async ({ server }) => {
  const source = await server.createSource("first-party site");
  writeKey = source.writeKey;
  const { result, requested } = await visit(server, "no");
  expect(result.error).toBeUndefined();
  const waypostOrigin = new URL(server.url).origin;
  // Only the page itself and Waypost: no Segment CDN, API or metrics.
  expect(requested.filter((url) => new URL(url).origin !== page.origin && new URL(url).origin !== waypostOrigin)).toEqual([]);
  const paths = requested.filter((url) => url.startsWith(waypostOrigin)).map((url) => new URL(url).pathname);
  expect(paths).toContain(`/analytics.js/v1/${writeKey}/analytics.min.js`);
  expect(paths).toContain(`/v1/projects/${writeKey}/settings`);
  expect(paths).toContain("/v1/t");
  expect(paths).toContain("/v1/p");

  const stored = await server.pool.query<{ payload: string }>("SELECT payload FROM messages WHERE source_id = $1 AND message_id = $2", [
    source.id,
    result.messageId,
  ]);
  expect(JSON.parse(stored.rows[0]!.payload)).toMatchObject({ type: "track", event: "Order Completed", properties: { total: 12.5 } });
});

test("the first-party cookie is set only with consent: HttpOnly, SameSite=Lax, a year long", async ({ server }) => {
  const source = await server.createSource("cookie site");
  writeKey = source.writeKey;
  const refused = await visit(server, "no");
  expect(refused.result.answer).toEqual({ anonymousId: refused.result.anonymousId, cookie: false });
  expect(refused.cookies.filter((c) => c.name === "ajs_anonymous_id")).toEqual([]);

  const given = await visit(server, "yes");
  expect(given.result.answer).toEqual({ anonymousId: given.result.anonymousId, cookie: true });
  const cookie = given.cookies.find((c) => c.name === "ajs_anonymous_id");
  expect(cookie).toMatchObject({ value: given.result.anonymousId, httpOnly: true, sameSite: "Lax", path: "/" });
  const days = (cookie!.expires * 1000 - Date.now()) / 86_400_000;
  expect(days).toBeGreaterThan(360);
});
