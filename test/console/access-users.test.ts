import { createHash, randomBytes } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { Role } from "../../gen/waypost/v1/access_pb.js";
import { type ConsolePage, openConsole } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * The Users page with the admin token (an owner): people who signed in
 * through the identity provider (rows put straight into the database here:
 * the sign-in itself is tested in test/sign-in/), a role changed and saved, a
 * person signed out everywhere and disabled; a role the provider's groups
 * set is shown, not offered for change. Debian's Chromium against a real
 * Waypost.
 */
let console_: ConsolePage;
let page: Page;
let anaId = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  const { rows } = await server.pool.query<{ id: string }>(
    `INSERT INTO users (issuer, subject, email, role) VALUES ('https://idp.example', 'sub-1', 'ana@example.org', 'viewer') RETURNING id`,
  );
  anaId = rows[0]!.id;
  await server.pool.query(
    `INSERT INTO users (issuer, subject, email, name, role, role_from_claim)
     VALUES ('https://idp.example', 'sub-2', 'bo@example.org', 'Bo', 'editor', true)`,
  );
  await server.pool.query(
    `INSERT INTO user_sessions (id_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, 'csrf', now() + interval '1 hour')`,
    [createHash("sha256").update(randomBytes(32).toString("base64url")).digest(), anaId],
  );
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
const row = (email: string) => page.getByRole("table", { name: "Users" }).getByRole("row").filter({ hasText: email });
const userOf = async (server: TestServer, id: string) =>
  (await server.pool.query<{ role: string; disabled: boolean }>("SELECT role, disabled FROM users WHERE id = $1", [id])).rows[0];

test("a role changed in the page is saved, and still there after a reload", async ({ server }) => {
  await nav("Users").click();
  const role = page.getByRole("combobox", { name: "Role of ana@example.org" });
  expect(await role.inputValue()).toBe(String(Role.VIEWER));
  await role.selectOption({ label: "editor" });
  await page.getByRole("button", { name: "Save role of ana@example.org" }).click();
  await row("ana@example.org").getByRole("status").filter({ hasText: "Saved: editor." }).waitFor();
  expect(await userOf(server, anaId)).toEqual({ role: "editor", disabled: false });

  await page.reload();
  await row("ana@example.org").waitFor();
  expect(await page.getByRole("combobox", { name: "Role of ana@example.org" }).inputValue()).toBe(String(Role.EDITOR));
});

test("a role the identity provider's groups set is shown, not offered for change", async () => {
  await row("bo@example.org").filter({ hasText: "Set by the identity provider's groups" }).filter({ hasText: "editor" }).waitFor();
  expect(await page.getByRole("combobox", { name: "Role of bo@example.org" }).count()).toBe(0);
});

test("Sign out everywhere ends the person's sessions", async ({ server }) => {
  await page.getByRole("button", { name: "Sign out everywhere: ana@example.org" }).click();
  await row("ana@example.org").getByRole("status").filter({ hasText: "1 session ended." }).waitFor();
  const { rows } = await server.pool.query("SELECT revoked_at FROM user_sessions WHERE user_id = $1", [anaId]);
  expect(rows[0].revoked_at).toBeInstanceOf(Date);
});

test("Disable asks first, then marks the person disabled; Enable brings them back", async ({ server }) => {
  await page.getByRole("button", { name: "Disable ana@example.org" }).click();
  await row("ana@example.org").filter({ hasText: "disabled" }).waitFor();
  await page.getByRole("button", { name: "Enable ana@example.org" }).waitFor();
  expect(await userOf(server, anaId)).toEqual({ role: "editor", disabled: true });

  await page.getByRole("button", { name: "Enable ana@example.org" }).click();
  await page.getByRole("button", { name: "Disable ana@example.org" }).waitFor();
  expect(await userOf(server, anaId)).toEqual({ role: "editor", disabled: false });
});

test("each change is in the audit log", async () => {
  await nav("Audit log").click();
  const rows = page.getByRole("table", { name: "Audit log" }).getByRole("row");
  await rows.filter({ hasText: "user.update" }).filter({ hasText: 'role: "ROLE_VIEWER" → "ROLE_EDITOR"' }).waitFor();
  await rows.filter({ hasText: "user.revoke_sessions" }).filter({ hasText: anaId }).waitFor();
  await rows.filter({ hasText: "user.update" }).filter({ hasText: "disabled: true" }).first().waitFor();
  expect(console_.problems).toEqual([]);
});
