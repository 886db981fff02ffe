import { create } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { PrincipalSchema, Role } from "../../gen/waypost/v1/access_pb.js";
import { scopesOf } from "../../src/access/roles.js";
import { rpcRules } from "../../src/api/access/rpc-scopes.js";
import { diffLines } from "../../src/console/app/audit-diff.js";
import { authSessionOf } from "../../src/console/app/auth-session.js";
import { may, mayCreateTokens, rolesUpTo, rpcScopes } from "../../src/console/app/permissions.js";

// The console's own knowledge of scopes (it may not import the server's)
// checked against the server's table and roles, and its readings of the
// audit diff and of GET /auth/session.

test("each RPC the console offers needs, in its table, the scope the server's table names", () => {
  for (const [rpc, scope] of Object.entries(rpcScopes)) {
    expect(rpcRules[rpc]?.scope, rpc).toBe(scope);
  }
});

test("a viewer may read everything (profiles too) but the audit log, users and others' tokens, and change nothing", () => {
  const viewer = create(PrincipalSchema, { kind: "token", role: Role.VIEWER, scopes: [...scopesOf("viewer")] });
  const offered = Object.keys(rpcScopes).filter((rpc) => may(viewer, rpc as keyof typeof rpcScopes));
  expect(offered.sort()).toEqual(
    [
      "AudienceService/ListAudiences",
      "DeletionService/ListDeletionRequests",
      "DeliveryService/GetDestinationStats",
      "DeliveryService/ListDeliveries",
      "DeliveryService/ExplainMessage",
      "DestinationService/ListDestinations",
      "ProfileService/GetProfile",
      "ProfileService/ListProfileEvents",
      "ProfileService/ListProfileMerges",
      "ProfileService/SearchProfiles",
      "SourceService/ListSources",
      "TokenService/CreateToken",
      "TokenService/ListTokens",
      "TokenService/RevokeToken",
      "TrackingPlanService/GetTrackingPlan",
    ].sort(),
  );
  // A viewer's API token cannot tell whether a person is behind it: no Create token.
  expect(mayCreateTokens(viewer)).toBe(false);
  expect(mayCreateTokens({ ...viewer, kind: "user" })).toBe(true);
  expect(rolesUpTo(Role.EDITOR).map(([, name]) => name)).toEqual(["viewer", "editor"]);
});

test("an owner may do everything the console offers", () => {
  const owner = create(PrincipalSchema, { kind: "admin-token", role: Role.OWNER, scopes: [...scopesOf("owner")] });
  for (const rpc of Object.keys(rpcScopes)) expect(may(owner, rpc as keyof typeof rpcScopes), rpc).toBe(true);
});

test("an audit diff reads as field: from → to, a secret only as changed", () => {
  expect(
    diffLines({
      name: { from: "a", to: "b" },
      sharedSecret: "changed",
      enabled: { to: true },
      webhooks: { from: [{ url: "https://x.example" }] },
      request: { id: "d-1" },
    }),
  ).toEqual([
    'name: "a" → "b"',
    "sharedSecret: changed",
    "enabled: true",
    'webhooks: [{"url":"https://x.example"}] → (none)',
    'request: {"id":"d-1"}',
  ]);
  expect(diffLines(undefined)).toEqual([]);
});

test("GET /auth/session's answer: anything but its JSON is no session and no provider", () => {
  expect(authSessionOf(undefined)).toEqual({ signedIn: false, oidc: false });
  expect(authSessionOf("<html>")).toEqual({ signedIn: false, oidc: false });
  expect(authSessionOf({ signedIn: false, oidc: true })).toEqual({ signedIn: false, oidc: true });
  // Signed in without a CSRF token would be refused at every call: not signed in.
  expect(authSessionOf({ signedIn: true, oidc: true })).toEqual({ signedIn: false, oidc: true });
  const user = { id: "u-1", email: "ana@example.org", name: "Ana", role: "viewer" };
  expect(authSessionOf({ signedIn: true, oidc: true, user, csrfToken: "c" })).toEqual({ signedIn: true, oidc: true, user, csrfToken: "c" });
});
