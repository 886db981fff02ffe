import { afterAll, beforeAll, expect, test } from "vitest";
import { auditRows, type SignInStand, sessionOf, signInWithFetch, startSignInStand } from "./support.js";

// Groups from the provider: who may sign in (WAYPOST_OIDC_ALLOWED_GROUPS)
// and which role they get (WAYPOST_OIDC_ROLE_MAPPING), set again at every
// sign-in. Here the provider puts the groups in the ID token itself
// (conformIdTokenClaims off); sign-in.test.ts reads them from userinfo.

let stand: SignInStand;

beforeAll(async () => {
  stand = await startSignInStand({
    env: {
      WAYPOST_OIDC_ALLOWED_GROUPS: "staff,waypost-admins",
      WAYPOST_OIDC_ROLE_MAPPING: "waypost-admins=admin,waypost-editors=editor",
      WAYPOST_OIDC_DEFAULT_ROLE: "viewer",
    },
    accounts: [
      { sub: "dana", email: "dana@example.com", groups: ["staff", "waypost-admins", "waypost-editors"] },
      { sub: "mallory", email: "mallory@example.net", groups: ["contractors"] },
    ],
    conformIdTokenClaims: false,
  });
});
afterAll(async () => {
  await stand?.close();
});

const userRow = async (subject: string) => (await stand.pool.query("SELECT * FROM users WHERE subject = $1", [subject])).rows[0];

test("the highest mapped role wins, and falls back to the default when the group is gone", async () => {
  const first = await signInWithFetch(stand, "dana");
  expect(first.callback.status, first.callback.body).toBe(303);
  // The first user ever, but the role comes from a group: admin, not owner.
  expect((await sessionOf(stand, first.browser)).user.role).toBe("admin");
  expect(await userRow("dana")).toMatchObject({ role: "admin", role_from_claim: true });

  stand.provider.accounts.get("dana")!.groups = ["staff"];
  const again = await signInWithFetch(stand, "dana");
  expect(again.callback.status, again.callback.body).toBe(303);
  expect((await sessionOf(stand, again.browser)).user.role).toBe("viewer");
  // Still the provider's to set: an owner cannot hand back what the provider took away.
  expect(await userRow("dana")).toMatchObject({ role: "viewer", role_from_claim: true });
  // The earlier session follows the user's row: its role is the new one too.
  expect((await sessionOf(stand, first.browser)).user.role).toBe("viewer");
});

test("a role an owner gave by hand is kept while no group maps to one", async () => {
  await stand.pool.query("UPDATE users SET role = 'editor', role_from_claim = false WHERE subject = 'dana'");
  const { browser, callback } = await signInWithFetch(stand, "dana");
  expect(callback.status).toBe(303);
  expect((await sessionOf(stand, browser)).user.role).toBe("editor");
});

test("someone in none of WAYPOST_OIDC_ALLOWED_GROUPS is refused", async () => {
  const { browser, callback } = await signInWithFetch(stand, "mallory");
  expect(callback.status).toBe(403);
  expect(callback.body).toContain("mallory@example.net is in none of the allowed groups (WAYPOST_OIDC_ALLOWED_GROUPS)");
  expect((await sessionOf(stand, browser)).signedIn).toBe(false);
  expect(await userRow("mallory")).toBeUndefined();
  expect(await auditRows(stand.pool, "session.sign_in_failed")).toContainEqual(
    expect.objectContaining({
      actor_kind: "anonymous",
      actor_name: "mallory@example.net",
      outcome: expect.stringContaining("allowed groups"),
    }),
  );
});

test("a disabled user is refused, and their sessions end", async () => {
  const before = await signInWithFetch(stand, "dana");
  expect((await sessionOf(stand, before.browser)).signedIn).toBe(true);
  await stand.pool.query("UPDATE users SET disabled = true WHERE subject = 'dana'");
  try {
    const { callback } = await signInWithFetch(stand, "dana");
    expect(callback.status).toBe(403);
    expect(callback.body).toContain("user dana@example.com is disabled");
    expect((await sessionOf(stand, before.browser)).signedIn).toBe(false);
  } finally {
    await stand.pool.query("UPDATE users SET disabled = false WHERE subject = 'dana'");
  }
});
