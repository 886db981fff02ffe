import { describe, expect, test } from "vitest";
import type { OidcRole } from "../../src/access-config.js";
import { checkAdmission, ClaimsRefusal, groupsOf, identityOf, mappedRole, roleFromClaims } from "../../src/sign-in/claims-policy.js";

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ClaimsRefusal) return { message: error.message, email: error.email };
    throw error;
  }
  throw new Error("not refused");
};

describe("identityOf", () => {
  test("reads sub, the email (trimmed, lowercased), the name and the groups claim named", () => {
    expect(identityOf({ sub: "s1", email: " Ann@Example.COM ", email_verified: true, name: "Ann", roles: ["a", "b"] }, "roles")).toEqual({
      subject: "s1",
      email: "ann@example.com",
      name: "Ann",
      groups: ["a", "b"],
    });
  });

  test("an absent email_verified is accepted; false (or the string) is refused", () => {
    expect(identityOf({ sub: "s", email: "a@b.c" }, "groups").email).toBe("a@b.c");
    expect(refusal(() => identityOf({ sub: "s", email: "a@b.c", email_verified: false }, "groups"))).toEqual({
      message: "email a@b.c is not verified by the identity provider",
      email: "a@b.c",
    });
    expect(refusal(() => identityOf({ sub: "s", email: "a@b.c", email_verified: "false" }, "groups")).message).toContain("not verified");
  });

  test("refuses a missing subject, a missing or malformed email, naming what to do", () => {
    expect(refusal(() => identityOf({ email: "a@b.c" }, "groups")).message).toBe("the identity provider sent no subject (sub claim)");
    expect(refusal(() => identityOf({ sub: "s" }, "groups")).message).toContain("ask for the email scope (WAYPOST_OIDC_SCOPES)");
    expect(refusal(() => identityOf({ sub: "s", email: "not an email" }, "groups")).message).toContain("is not an email address");
    expect(refusal(() => identityOf({ sub: "s", email: `${"a".repeat(400)}@b.c` }, "groups")).message).toContain("is not an email address");
  });
});

test("groupsOf: a list of strings, or one string; anything else is none; bounded", () => {
  expect(groupsOf(["a", 3, "", null, "b"])).toEqual(["a", "b"]);
  expect(groupsOf("admins")).toEqual(["admins"]);
  expect(groupsOf({ a: 1 })).toEqual([]);
  expect(groupsOf(undefined)).toEqual([]);
  expect(groupsOf(Array.from({ length: 5000 }, (_, i) => `g${i}`))).toHaveLength(1000);
});

describe("checkAdmission", () => {
  const identity = { subject: "s", email: "ann@example.com", name: "", groups: ["staff"] };

  test("no list: everyone", () => {
    expect(() => checkAdmission(identity, { allowedDomains: [], allowedGroups: [] })).not.toThrow();
  });

  test("allowed domains: exactly the email's domain (not a subdomain, not a suffix)", () => {
    expect(() => checkAdmission(identity, { allowedDomains: ["example.com"], allowedGroups: [] })).not.toThrow();
    for (const email of ["ann@sub.example.com", "ann@badexample.com", "ann@example.com.evil"]) {
      const domain = email.split("@")[1];
      expect(refusal(() => checkAdmission({ ...identity, email }, { allowedDomains: ["example.com"], allowedGroups: [] }))).toEqual({
        message: `email domain ${domain} is not allowed (WAYPOST_OIDC_ALLOWED_DOMAINS)`,
        email,
      });
    }
  });

  test("allowed groups: one membership is enough", () => {
    expect(() => checkAdmission(identity, { allowedDomains: [], allowedGroups: ["other", "staff"] })).not.toThrow();
    expect(refusal(() => checkAdmission(identity, { allowedDomains: [], allowedGroups: ["admins"] })).message).toBe(
      "ann@example.com is in none of the allowed groups (WAYPOST_OIDC_ALLOWED_GROUPS)",
    );
  });

  test("both lists: both must match", () => {
    const both = { allowedDomains: ["example.com"], allowedGroups: ["staff"] };
    expect(() => checkAdmission(identity, both)).not.toThrow();
    expect(() => checkAdmission({ ...identity, groups: [] }, both)).toThrow(ClaimsRefusal);
    expect(() => checkAdmission({ ...identity, email: "ann@example.org" }, both)).toThrow(ClaimsRefusal);
  });
});

describe("roles from groups", () => {
  const roleMapping = new Map<string, OidcRole>([
    ["viewers", "viewer"],
    ["admins", "admin"],
    ["editors", "editor"],
  ]);

  test("the highest mapped role among the groups", () => {
    expect(mappedRole(["editors", "admins", "viewers"], roleMapping)).toBe("admin");
    expect(mappedRole(["viewers", "editors"], roleMapping)).toBe("editor");
    expect(mappedRole(["other"], roleMapping)).toBeUndefined();
  });

  test("no mapped group: a new user or a hand-given role is left alone, a role from a group falls back to the default", () => {
    const config = { roleMapping, defaultRole: "viewer" as const };
    expect(roleFromClaims(["admins"], config, undefined)).toBe("admin");
    expect(roleFromClaims(["admins"], config, { role_from_claim: false })).toBe("admin");
    expect(roleFromClaims([], config, undefined)).toBeUndefined();
    expect(roleFromClaims([], config, { role_from_claim: false })).toBeUndefined();
    expect(roleFromClaims(["other"], config, { role_from_claim: true })).toBe("viewer");
  });
});
