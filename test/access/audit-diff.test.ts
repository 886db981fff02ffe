import { describe, expect, it } from "vitest";
import { auditDiff, redacted, secretsSet } from "../../src/access/audit-diff.js";

describe("audit diffs", () => {
  it("lists the fields that changed, by dotted path, from and to", () => {
    const diff = auditDiff(
      { name: "a", enabled: true, rules: { filter: "x" }, same: 1 },
      { name: "b", enabled: true, rules: { filter: "y" }, same: 1, added: [1] },
    );
    expect(diff).toEqual({ name: { from: "a", to: "b" }, "rules.filter": { from: "x", to: "y" }, added: { to: [1] } });
  });

  it("says only 'changed' of a secret field, and never its value", () => {
    const diff = auditDiff(
      { sharedSecret: "old-secret", settings: { apiKey: "k1" } },
      { sharedSecret: "new-secret", settings: { apiKey: "k2" } },
    );
    expect(diff).toEqual({ sharedSecret: "changed", "settings.apiKey": "changed" });
    expect(JSON.stringify(diff)).not.toMatch(/secret"|k1|k2|old-|new-/);
  });

  it("cuts URL passwords, long strings and long lists, and hides secret names inside values", () => {
    const value = redacted({
      url: "amqp://user:hunter2@broker:5672/",
      long: "x".repeat(500),
      list: Array.from({ length: 50 }, (_, i) => i),
      headers: { Authorization: "Bearer t" },
    });
    expect(JSON.stringify(value)).not.toContain("hunter2");
    expect(JSON.stringify(value)).not.toContain("Bearer t");
    expect((value as { long: string }).long.length).toBeLessThan(260);
    expect((value as { list: string }).list).toBe("(50 items)");
  });

  it("tells an API token's description (kept) from a token string (a secret)", () => {
    expect(auditDiff(undefined, { token: { name: "ci", role: "ROLE_VIEWER" } })).toEqual({
      "token.name": { to: "ci" },
      "token.role": { to: "ROLE_VIEWER" },
    });
    expect(auditDiff(undefined, { token: "wpt_abc", headers: { "x-auth-token": "t", "X-Api-Key": "k" } })).toEqual({
      token: "changed",
      "headers.x-auth-token": "changed",
      "headers.X-Api-Key": "changed",
    });
  });

  it("marks the secrets a request sets, relative to the resource it wraps", () => {
    expect(secretsSet({ destination: { id: "d", sharedSecret: "s", name: "n" }, updateMask: "sharedSecret" })).toEqual({
      sharedSecret: "changed",
    });
    expect(secretsSet({ source: { webhook: { secret: "" } } })).toEqual({});
  });

  it("stays bounded for a huge change", () => {
    const before = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}`, i]));
    const diff = auditDiff(before, {});
    expect(Object.keys(diff).length).toBeLessThanOrEqual(201);
  });
});
