import { expect, test } from "vitest";
import { cliCodeOf, safeReturnTo } from "../../src/sign-in/sign-in-context.js";

test("return_to: console paths of this origin only", () => {
  expect(safeReturnTo("/console/sources?id=1#top")).toBe("/console/sources?id=1#top");
  expect(safeReturnTo("/console/a/../b")).toBe("/console/b");
  for (const raw of [
    null,
    "",
    "/console",
    "/",
    "//evil.example/console/",
    "/\\evil.example/console/",
    "https://evil.example/console/",
    "/console/../auth/logout",
    "/console/\nx",
    "/console/ x",
    `/console/${"a".repeat(2000)}`,
    "javascript:alert(1)",
  ]) {
    expect(safeReturnTo(raw), String(raw)).toBe("/console/");
  }
});

test("the CLI's code: 8 unambiguous characters, the same for the same state", () => {
  const code = cliCodeOf("A".repeat(43));
  expect(code).toMatch(/^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
  expect(cliCodeOf("A".repeat(43))).toBe(code);
  expect(cliCodeOf("B".repeat(43))).not.toBe(code);
});
