import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/config-values.js";
import { parseIdentity } from "../src/identity-config.js";

// WAYPOST_IDENTITY and WAYPOST_IDENTITY_RULES: the defaults, an operator's
// own types, and every mistake refused at start with a message naming it.

const rules = (value: unknown) => ({ WAYPOST_IDENTITY_RULES: typeof value === "string" ? value : JSON.stringify(value) });

describe("identity settings", () => {
  it("by default: on, one userId a profile first, anonymousIds unlimited last", () => {
    const config = parseIdentity({});
    expect(config.enabled).toBe(true);
    expect(config.rules.map((rule) => [rule.type, rule.path, rule.limit, rule.priority])).toEqual([
      ["user_id", "userId", 1, 1],
      ["anonymous_id", "anonymousId", 0, 10_000],
    ]);
    expect(config.rules[0]!.blocked.has("undefined")).toBe(true);
    expect(parseIdentity({ WAYPOST_IDENTITY: "off" }).enabled).toBe(false);
  });

  it("an operator's types sit by priority; a built-in type's limit can change, blocked values are lower-cased", () => {
    const config = parseIdentity(
      rules([
        { type: "email", path: "traits.email", limit: 1, priority: 2, blocked: ["Test@Example.com"] },
        { type: "device_id", path: "context.device.id" },
        { type: "user_id", limit: 2 },
      ]),
    );
    expect(config.rules.map((rule) => `${rule.type}:${rule.limit}`)).toEqual(["user_id:2", "email:1", "device_id:0", "anonymous_id:0"]);
    expect(config.rules.find((rule) => rule.type === "email")!.blocked.has("test@example.com")).toBe(true);
  });

  const mistakes: Array<[string, Record<string, string>, RegExp]> = [
    ["a mode that is not on or off", { WAYPOST_IDENTITY: "yes" }, /WAYPOST_IDENTITY must be on or off, got "yes"/],
    ["rules that are not JSON", rules("[{type:"), /WAYPOST_IDENTITY_RULES must be JSON/],
    ["rules that are not a list", rules({ type: "email" }), /must be a JSON list/],
    ["a rule that is not an object", rules([null]), /WAYPOST_IDENTITY_RULES\[0\] must be an object/],
    ["a type with capitals", rules([{ type: "Email", path: "traits.email" }]), /\[0\]\.type must be a lower-case name/],
    ["a type without a path", rules([{ type: "email" }]), /\[0\]\.path must be a dotted path/],
    ["a path that is code", rules([{ type: "email", path: "traits['email']" }]), /\[0\]\.path must be a dotted path/],
    ["a negative limit", rules([{ type: "email", path: "traits.email", limit: -1 }]), /\[0\]\.limit must be an integer from 0/],
    ["a priority of 0", rules([{ type: "email", path: "traits.email", priority: 0 }]), /\[0\]\.priority must be an integer from 1/],
    [
      "blocked values that are not strings",
      rules([{ type: "email", path: "traits.email", blocked: [1] }]),
      /\[0\]\.blocked must be a list/,
    ],
    ["a built-in type moved", rules([{ type: "user_id", path: "traits.id" }]), /user_id is read from userId; its path cannot change/],
    [
      "a type named twice",
      rules([
        { type: "email", path: "traits.email" },
        { type: "email", path: "context.email" },
      ]),
      /\[1\]: email is named twice/,
    ],
  ];
  for (const [name, env, message] of mistakes) {
    it(`refuses ${name}`, () => {
      expect(() => parseIdentity(env)).toThrow(ConfigError);
      expect(() => parseIdentity(env)).toThrow(message);
    });
  }
});
