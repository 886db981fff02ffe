import { describe, expect, it } from "vitest";
import { allScopes, roleCovering, roles, scopesOf } from "../../src/access/roles.js";

describe("roles", () => {
  it("each hold every scope of the roles below them", () => {
    for (let i = 1; i < roles.length; i++) {
      const lower = scopesOf(roles[i - 1]!);
      const higher = scopesOf(roles[i]!);
      expect(
        [...lower].every((scope) => higher.has(scope)),
        roles[i],
      ).toBe(true);
      expect(higher.size).toBeGreaterThan(lower.size);
    }
    expect(scopesOf("owner").size).toBe(allScopes.length);
  });

  it("match the documented split: viewers read, editors change, admins manage tokens and deletions, owners people", () => {
    expect(
      [...scopesOf("viewer")].every((scope) => scope.endsWith(":read") && !["audit:read", "users:read", "tokens:read"].includes(scope)),
    ).toBe(true);
    expect(scopesOf("editor").has("destinations:write")).toBe(true);
    expect(scopesOf("editor").has("deletions:write")).toBe(false);
    expect(scopesOf("admin").has("audit:read")).toBe(true);
    expect(scopesOf("admin").has("users:write")).toBe(false);
    expect(roleCovering(["sources:read"])).toBe("viewer");
    expect(roleCovering(["sources:read", "tokens:write"])).toBe("admin");
  });
});
