import { expect, test } from "vitest";
import { dropFields, validateDropFields } from "../../src/routing/drop-fields.js";

test("drops nested paths and skips missing ones", () => {
  const body = { context: { ip: "1.2.3.4", page: { path: "/" } }, properties: { email: "a@b", total: 1 }, userId: "u" };
  expect(dropFields(body, ["context.ip", "properties.email", "traits.email", "userId.length"])).toBe(true);
  expect(body).toEqual({ context: { page: { path: "/" } }, properties: { total: 1 }, userId: "u" });
  expect(dropFields(body, ["nothing.here"])).toBe(false);
});

test("validation names the bad path and the limit", () => {
  expect(() => validateDropFields(["context.ip", "a..b"], "destination.dropFields")).toThrow("destination.dropFields[1]: must be");
  expect(() => validateDropFields([""], "destination.dropFields")).toThrow("destination.dropFields[0]: must not be empty");
  const many = Array.from({ length: 51 }, (_, i) => `p${i}`);
  expect(() => validateDropFields(many, "destination.dropFields")).toThrow("destination.dropFields: has 51 paths, over the limit of 50");
  expect(() => validateDropFields(many.slice(0, 50))).not.toThrow();
});
