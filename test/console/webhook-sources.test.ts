import { createHash, createHmac } from "node:crypto";
import { afterAll, describe, expect } from "vitest";
import type { Page } from "playwright-core";
import { HookVerifier, SourceKind } from "../../gen/waypost/v1/source_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { hookRequestState } from "../helpers/hook-requests.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * Webhook sources in Debian's Chromium against a real Waypost: creating one
 * (the inbound URL shown once), rotating its token, testing a transform
 * against stored requests, seeing a failed request and reprocessing it.
 */
const test = testWith();

describe("webhook sources in the console", () => {
  let consolePage: ConsolePage;
  let page: Page;
  let sourceId = "";
  let inboundUrl = "";
  let firstUrl = "";
  const secret = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0";

  /** POSTs a Stripe-signed event to the inbound URL, as Stripe does. */
  async function sendStripe(url: string, event: object, signWith = secret): Promise<Response> {
    const body = JSON.stringify(event);
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", signWith).update(`${t}.${body}`).digest("hex");
    return fetch(url, { method: "POST", headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${v1}` }, body });
  }
  async function requestIds(server: TestServer, id: string): Promise<string[]> {
    const result = await server.pool.query<{ id: string }>("SELECT id::text FROM hook_requests WHERE source_id = $1 ORDER BY id", [id]);
    return result.rows.map((r) => r.id);
  }

  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  async function tokenHash(server: TestServer, id: string): Promise<string> {
    const result = await server.pool.query<{ hash: Buffer }>("SELECT hook_token_hash AS hash FROM sources WHERE id = $1", [id]);
    return result.rows[0]!.hash.toString("hex");
  }
  async function processed(server: TestServer, id: string): Promise<void> {
    server.waypost.hooks!.wake(id);
    await server.waypost.hooks!.idle();
  }
  const broken = "function transform(request) {\n  return [{ type: 'track', userId: request.body.customer.id, event: 'Paid' }];\n}";
  const fixed =
    "function transform(request) {\n  var b = request.body;\n  return [{ type: 'track', userId: b.customer ? b.customer.id : b.user, event: 'Paid' }];\n}";

  test.beforeAll(async ({ server }) => {
    consolePage = await openConsole(server);
    page = consolePage.page;
  });
  afterAll(async () => {
    await consolePage?.browser.close();
  });

  test("creates a webhook source and shows its inbound URL once", async ({ server }) => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sources", exact: true }).click();
    await page.getByLabel("Name", { exact: true }).fill("payments");
    await page.getByLabel("Kind").selectOption({ label: "Webhook (a SaaS tool posts to its URL)" });
    // A setting the server refuses is named under its field.
    await page.getByLabel("Verifier").selectOption({ label: "HMAC" });
    await page.getByLabel("Secret", { exact: true }).fill("k");
    await page.getByRole("button", { name: "Create source" }).click();
    const header = page.getByLabel("Signature header");
    await page.locator("#error-webhook_hmac_header").filter({ hasText: "must be a header name" }).waitFor();
    expect(await header.getAttribute("aria-invalid")).toBe("true");
    expect((await server.sources.listSources({})).sources).toEqual([]);
    await page.getByLabel("Verifier").selectOption({ label: "Stripe" });
    await page.getByLabel("Secret", { exact: true }).fill(secret);
    await page.getByLabel("Idempotency key").fill("$.id");
    await page.getByRole("textbox", { name: "Transform" }).fill(broken);
    await page.getByRole("button", { name: "Create source" }).click();
    const shown = page.getByLabel("Inbound URL of payments.");
    const url = (await shown.textContent()) ?? "";
    expect(url).toMatch(new RegExp(`^${server.url}/hooks/[A-Za-z0-9_-]{43}$`));
    await page.getByRole("button", { name: "Copy" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);

    firstUrl = url;
    const [source] = (await server.sources.listSources({})).sources;
    sourceId = source!.id;
    expect(await tokenHash(server, sourceId)).toBe(sha256(url.split("/hooks/")[1]!));
    expect(source).toMatchObject({
      kind: SourceKind.WEBHOOK,
      webhook: { verifier: HookVerifier.STRIPE, hasSecret: true, idempotencyKey: "$.id", transform: broken },
    });
    const row = page.getByRole("table", { name: "Sources" }).getByRole("row").filter({ hasText: "payments" });
    expect(await row.textContent()).toContain("Webhook");

    // Shown once: gone after Done, and not on the source's page.
    await page.getByRole("button", { name: "Done" }).click();
    await row.getByRole("link", { name: "payments", exact: true }).click();
    await page.getByRole("heading", { name: "Source payments" }).waitFor();
    await page.getByRole("button", { name: "Rotate URL token" }).waitFor();
    expect(await page.content()).not.toContain(url.split("/hooks/")[1]!);
    // The stored settings, the secret as "set".
    expect(await page.getByLabel("Verifier").inputValue()).toBe(String(HookVerifier.STRIPE));
    expect(await page.getByLabel("Secret", { exact: true }).inputValue()).toBe("");
    await page.getByText("A secret is set; leave this empty to keep it.").waitFor();
    expect(await page.getByRole("textbox", { name: "Transform" }).inputValue()).toBe(broken);
  });

  test("rotates the URL token, showing the new URL once", async ({ server }) => {
    const before = await tokenHash(server, sourceId);
    await page.getByRole("button", { name: "Rotate URL token" }).click();
    const url = (await page.getByLabel("New inbound URL of payments.").textContent()) ?? "";
    expect(url).toMatch(new RegExp(`^${server.url}/hooks/[A-Za-z0-9_-]{43}$`));
    const after = await tokenHash(server, sourceId);
    expect(after).not.toBe(before);
    expect(after).toBe(sha256(url.split("/hooks/")[1]!));
    inboundUrl = url;
    await page.getByRole("button", { name: "Done" }).click();
  });

  test("shows a failed request, tests a fixed transform against stored requests, saves it and reprocesses", async ({ server }) => {
    // Through the real inbound URL: the old URL is gone, a wrong signature is refused, good ones are stored.
    expect((await sendStripe(firstUrl, { id: "evt_0", customer: { id: "c0" } })).status).toBe(404);
    const forged = await sendStripe(inboundUrl, { id: "evt_x", customer: { id: "cx" } }, "whsec_wrong");
    expect(forged.status).toBe(401);
    const goodAnswer = await sendStripe(inboundUrl, { id: "evt_1", customer: { id: "c1" } });
    expect(goodAnswer.status).toBe(200);
    expect((await sendStripe(inboundUrl, { id: "evt_2", user: "u9" })).status).toBe(200);
    const [good, bad] = (await requestIds(server, sourceId)) as [string, string];
    await processed(server, sourceId);
    expect((await hookRequestState(server.pool, bad)).status).toBe("failed");

    await page.reload();
    const requests = page.getByRole("table", { name: "Requests" });
    const badRow = requests.getByRole("row").filter({ has: page.getByRole("cell", { name: bad, exact: true }) });
    await badRow.filter({ hasText: "failed" }).waitFor();
    expect(await badRow.textContent()).toMatch(/transform: TypeError: .*'id' of undefined/);
    const goodRow = requests.getByRole("row").filter({ has: page.getByRole("cell", { name: good, exact: true }) });
    expect(await goodRow.textContent()).toContain("processed");
    await goodRow.getByRole("link", { name: `hook-${good}-0` }).waitFor();
    // The body is folded: open it to read it.
    const body = badRow.locator("pre.body");
    expect(await body.isVisible()).toBe(false);
    await badRow.locator("summary").click();
    expect(await body.textContent()).toContain('"user": "u9"');

    // The fix, tested as typed: each request's calls, nothing stored.
    await page.getByRole("textbox", { name: "Transform" }).fill(fixed);
    await page.getByRole("button", { name: "Test against recent requests" }).click();
    const results = page.getByRole("table", { name: "Transform test results" });
    const badResult = results.getByRole("row").filter({ has: page.getByRole("cell", { name: bad, exact: true }) });
    await badResult.waitFor();
    expect(await badResult.textContent()).toContain(`hook-${bad}-0`);
    expect(await badResult.textContent()).toContain('"userId": "u9"');
    expect((await hookRequestState(server.pool, bad)).status).toBe("failed");
    // Editing the transform hides results that were the old text's.
    await page.getByRole("textbox", { name: "Transform" }).fill(`${fixed}\n`);
    await results.waitFor({ state: "detached" });

    await page.getByLabel("Rate limit").fill("25");
    await page.getByRole("button", { name: "Save source" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    // Saved with the secret left empty: the stored one is kept (a signed request still passes).
    expect((await server.sources.getSource({ id: sourceId })).source?.webhook).toMatchObject({
      transform: `${fixed}\n`,
      maxRequestsPerSecond: 25,
      hasSecret: true,
      verifier: HookVerifier.STRIPE,
    });
    expect((await sendStripe(inboundUrl, { id: "evt_3", customer: { id: "c3" } })).status).toBe(200);

    await page.getByRole("button", { name: "Reprocess all failed" }).click();
    await page.getByRole("status").filter({ hasText: "1 request set to run again." }).waitFor();
    await processed(server, sourceId);
    await page.getByRole("button", { name: "Refresh" }).click();
    await badRow.filter({ hasText: "processed" }).waitFor();
    await badRow.getByRole("link", { name: `hook-${bad}-0` }).click();
    await page.waitForURL(new RegExp(`/console/messages/hook-${bad}-0`));
    expect(consolePage.problems).toEqual([]);
  });
});
