import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { HookVerifier, SourceKind } from "../../gen/waypost/v1/source_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { hookRequestState, insertHookRequest } from "../helpers/hook-requests.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * Webhook sources in Debian's Chromium against a real Waypost: creating one
 * (the inbound URL shown once), rotating its token, testing a transform
 * against stored requests, seeing a failed request and reprocessing it.
 */
describe("webhook sources in the console", () => {
  let server: TestServer;
  let consolePage: ConsolePage;
  let page: Page;
  let sourceId = "";

  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  async function tokenHash(id: string): Promise<string> {
    const result = await server.pool.query<{ hash: Buffer }>("SELECT hook_token_hash AS hash FROM sources WHERE id = $1", [id]);
    return result.rows[0]!.hash.toString("hex");
  }
  async function processed(id: string): Promise<void> {
    server.waypost.hooks!.wake(id);
    await server.waypost.hooks!.idle();
  }
  const broken = "function transform(request) {\n  return [{ type: 'track', userId: request.body.customer.id, event: 'Paid' }];\n}";
  const fixed =
    "function transform(request) {\n  var b = request.body;\n  return [{ type: 'track', userId: b.customer ? b.customer.id : b.user, event: 'Paid' }];\n}";

  beforeAll(async () => {
    server = await startTestServer();
    consolePage = await openConsole(server);
    page = consolePage.page;
  });
  afterAll(async () => {
    await consolePage?.browser.close();
    await server?.stop();
  });

  it("creates a webhook source and shows its inbound URL once", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sources", exact: true }).click();
    await page.getByLabel("Name", { exact: true }).fill("payments");
    await page.getByLabel("Kind").selectOption({ label: "Webhook (a SaaS tool posts to its URL)" });
    await page.getByLabel("Verifier").selectOption({ label: "Stripe" });
    await page.getByLabel("Secret", { exact: true }).fill("whsec_c2VjcmV0c2VjcmV0c2VjcmV0");
    await page.getByLabel("Idempotency key").fill("$.id");
    await page.getByRole("textbox", { name: "Transform" }).fill(broken);
    await page.getByRole("button", { name: "Create source" }).click();
    const shown = page.getByLabel("Inbound URL of payments.");
    const url = (await shown.textContent()) ?? "";
    expect(url).toMatch(new RegExp(`^${server.url}/hooks/[A-Za-z0-9_-]{43}$`));
    await page.getByRole("button", { name: "Copy" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);

    const [source] = (await server.sources.listSources({})).sources;
    sourceId = source!.id;
    expect(await tokenHash(sourceId)).toBe(sha256(url.split("/hooks/")[1]!));
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

  it("rotates the URL token, showing the new URL once", async () => {
    const before = await tokenHash(sourceId);
    await page.getByRole("button", { name: "Rotate URL token" }).click();
    const url = (await page.getByLabel("New inbound URL of payments.").textContent()) ?? "";
    expect(url).toMatch(new RegExp(`^${server.url}/hooks/[A-Za-z0-9_-]{43}$`));
    const after = await tokenHash(sourceId);
    expect(after).not.toBe(before);
    expect(after).toBe(sha256(url.split("/hooks/")[1]!));
    await page.getByRole("button", { name: "Done" }).click();
  });

  it("shows a failed request, tests a fixed transform against stored requests, saves it and reprocesses", async () => {
    const good = await insertHookRequest(server.pool, sourceId, { body: { id: "evt_1", customer: { id: "c1" } } });
    const bad = await insertHookRequest(server.pool, sourceId, { body: { id: "evt_2", user: "u9" } });
    await processed(sourceId);
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

    await page.getByRole("button", { name: "Save source" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    expect((await server.sources.getSource({ id: sourceId })).source?.webhook?.transform).toBe(`${fixed}\n`);

    await page.getByRole("button", { name: "Reprocess all failed" }).click();
    await page.getByRole("status").filter({ hasText: "1 request set to run again." }).waitFor();
    await processed(sourceId);
    await page.getByRole("button", { name: "Refresh" }).click();
    await badRow.filter({ hasText: "processed" }).waitFor();
    await badRow.getByRole("link", { name: `hook-${bad}-0` }).click();
    await page.waitForURL(new RegExp(`/console/messages/hook-${bad}-0`));
    expect(consolePage.problems).toEqual([]);
  });
});
