import { describe, expect, it } from "vitest";
import { hashTokenSecret, looksLikeTokenSecret, newTokenSecret, tokenDisplayPrefix } from "../../src/access/token-secret.js";

describe("API token secrets", () => {
  it("have the wpt_ prefix, 30 random base62 characters and a checksum that catches a changed character", () => {
    const secrets = new Set(Array.from({ length: 200 }, () => newTokenSecret()));
    expect(secrets.size).toBe(200);
    for (const secret of secrets) {
      expect(secret).toMatch(/^wpt_[0-9A-Za-z]{36}$/);
      expect(looksLikeTokenSecret(secret)).toBe(true);
      for (const at of [4, 20, 33, 39]) {
        const changed = secret.slice(0, at) + (secret[at] === "a" ? "b" : "a") + secret.slice(at + 1);
        expect(looksLikeTokenSecret(changed), `${secret} changed at ${at}`).toBe(false);
      }
    }
  });

  it("refuses what is not one: other lengths, prefixes, characters", () => {
    const secret = newTokenSecret();
    for (const text of [
      "",
      "wpt_",
      secret.slice(1),
      `${secret}x`,
      secret.replace("wpt_", "wpa_"),
      `${secret.slice(0, 10)}!${secret.slice(11)}`,
    ]) {
      expect(looksLikeTokenSecret(text), text).toBe(false);
    }
  });

  it("are shown by a prefix too short to use, and stored as sha256", () => {
    const secret = newTokenSecret();
    expect(tokenDisplayPrefix(secret)).toBe(secret.slice(0, 10));
    expect(hashTokenSecret(secret)).toHaveLength(32);
    expect(hashTokenSecret(secret).equals(hashTokenSecret(newTokenSecret()))).toBe(false);
  });
});
