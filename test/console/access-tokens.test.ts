import { createClient } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { TokenService } from "../../gen/waypost/v1/access_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { type ConsolePage, openConsole } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";

/**
 * The Tokens and Audit log pages with the admin token: a token created in
 * the page (its secret shown once, and working), listed by its prefix,
 * revoked (and then refused); the audit log shows both changes by the admin
 * token, a change's diff (a secret only as "changed"), filters by action and pages on. Debian's
 * Chromium against a real Waypost.
 */
let console_: ConsolePage;
let page: Page;
let secret = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
const tokenRows = () => page.getByRole("table", { name: "Tokens" }).getByRole("row");
const auditRows = () => page.getByRole("table", { name: "Audit log" }).getByRole("row");
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

test("Create token shows the secret once; the list shows its prefix, and the token works", async ({ server }) => {
  await nav("Tokens").click();
  await tokenRows().filter({ hasText: "No tokens yet." }).waitFor();
  await page.getByLabel("Name").fill("ci deploy");
  await page.getByLabel("Role").selectOption({ label: "editor" });
  // The admin token is no person: its tokens are service accounts', and the box says so.
  expect(await page.getByLabel("Service account").isChecked()).toBe(true);
  expect(await page.getByLabel("Service account").isDisabled()).toBe(true);
  await page.getByRole("button", { name: "Create token" }).click();

  secret = (await page.getByLabel("API token ci deploy.").textContent()) ?? "";
  expect(secret).toMatch(/^wpt_\w{36}$/);
  await page.getByText("it will not be shown again").waitFor();
  await page.getByRole("button", { name: "Copy" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

  const row = tokenRows().filter({ hasText: "ci deploy" });
  await row.filter({ hasText: `${secret.slice(0, 10)}…` }).waitFor();
  await row.filter({ hasText: "editor" }).filter({ hasText: "service account" }).waitFor();
  const { sources } = await createClient(SourceService, server.transport).listSources({}, bearer(secret));
  expect(sources).toEqual([]);

  // Once: gone after Done, and from the page after a reload.
  await page.getByRole("button", { name: "Done" }).click();
  await page.getByLabel("API token ci deploy.").waitFor({ state: "detached" });
  await page.reload();
  await tokenRows().filter({ hasText: "ci deploy" }).waitFor();
  expect(await page.getByText(secret).count()).toBe(0);
});

test("Revoke asks first, marks the token revoked, and the token is refused from then on", async ({ server }) => {
  await page.getByRole("button", { name: "Revoke ci deploy" }).click();
  await page.getByRole("button", { name: "Revoke ci deploy" }).waitFor({ state: "detached" });
  const revoked = tokenRows().filter({ hasText: "ci deploy" }).getByRole("cell").nth(7);
  expect(await revoked.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
  const tokens = createClient(TokenService, server.transport);
  await expect(tokens.listTokens({}, bearer(secret))).rejects.toThrow(/revoked/);
});

test("the audit log shows who created and revoked the token, and a change's diff", async ({ server }) => {
  const destination = await server.createDestination({ name: "a", sourceIds: [], webhooks: [{ url: "http://127.0.0.1:9/" }] });
  await server.destinations.updateDestination({
    destination: { id: destination.id, etag: destination.etag, name: "b", sharedSecret: "s3cret-value" },
    updateMask: { paths: ["name", "shared_secret"] },
  });
  await nav("Audit log").click();
  for (const action of ["token.create", "token.revoke"]) {
    await auditRows().filter({ hasText: action }).filter({ hasText: "admin token" }).waitFor();
  }
  const update = auditRows().filter({ hasText: "destination.update" });
  await update.filter({ hasText: 'name: "a" → "b"' }).filter({ hasText: "hasSharedSecret: changed" }).waitFor();
  expect(await page.getByText("s3cret-value").count()).toBe(0);
});

test("filtering by action shows only those rows, kept in the address", async () => {
  const filters = page.getByRole("search", { name: "Filter the audit log" });
  await filters.getByLabel("Action").fill("token.revoke");
  await filters.getByRole("button", { name: "Search" }).click();
  await auditRows().filter({ hasText: "token.create" }).first().waitFor({ state: "detached" });
  await auditRows().filter({ hasText: "token.revoke" }).waitFor();
  expect(new URL(page.url()).searchParams.get("action")).toBe("token.revoke");
  expect(await auditRows().count()).toBe(2);

  // A prefix ending in ".", and the actor.
  await filters.getByLabel("Action").fill("token.");
  await filters.getByLabel("Actor ID").fill("admin-token");
  await filters.getByRole("button", { name: "Search" }).click();
  await auditRows().filter({ hasText: "token.create" }).waitFor();
  expect(await auditRows().count()).toBe(3);
});

test("a long log pages on with Next page", async ({ server }) => {
  for (let i = 0; i < 51; i++) await server.createSource(`source ${i}`);
  // Opened afresh at the filtered address: no rows of another filter linger while it loads.
  await page.goto(`${server.url}/console/audit?action=source.create`);
  await auditRows().nth(50).waitFor();
  expect(await auditRows().count()).toBe(51);
  await page.getByRole("button", { name: "Next page" }).click();
  await page.getByText("Page 2").waitFor();
  await auditRows().nth(2).waitFor({ state: "detached" });
  expect(await auditRows().count()).toBe(2);
  await auditRows().filter({ hasText: "source.create" }).waitFor();
  expect(console_.problems).toEqual([]);
});
