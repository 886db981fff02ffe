import { expect, test } from "vitest";
import { isRoutedTo } from "../../src/ingest/routing.js";

test("no integrations object: delivered", () => {
  expect(isRoutedTo(undefined, "hook")).toBe(true);
  expect(isRoutedTo({}, "hook")).toBe(true);
});

test("All decides when neither Webhooks nor the destination's name is present", () => {
  expect(isRoutedTo({ All: false }, "hook")).toBe(false);
  expect(isRoutedTo({ All: true }, "hook")).toBe(true);
  expect(isRoutedTo({ All: false, Other: true }, "hook")).toBe(false);
});

test("Webhooks overrides All", () => {
  expect(isRoutedTo({ All: false, Webhooks: true }, "hook")).toBe(true);
  expect(isRoutedTo({ All: true, Webhooks: false }, "hook")).toBe(false);
});

test("the destination's own name overrides Webhooks", () => {
  expect(isRoutedTo({ Webhooks: false, hook: true }, "hook")).toBe(true);
  expect(isRoutedTo({ Webhooks: true, hook: false }, "hook")).toBe(false);
});

test("keys are case sensitive", () => {
  expect(isRoutedTo({ webhooks: false }, "hook")).toBe(true);
  expect(isRoutedTo({ all: false }, "hook")).toBe(true);
});

test("an options object counts as on", () => {
  expect(isRoutedTo({ All: false, Webhooks: { option: 1 } }, "hook")).toBe(true);
});
