import { expect, test } from "vitest";
import { Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { HookVerifier } from "../../gen/waypost/v1/source_pb.js";
import { PlanMode } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { lowerCaseNames, protoEnumNames } from "../../src/api/proto-enums.js";
import { hookVerifierNames, type HookVerifierName } from "../../src/ingest/hooks/hook-settings.js";

test("one table read both ways, UNSPECIFIED as the name given", () => {
  const orderings = protoEnumNames<Ordering, "none" | "per_user">({ none: Ordering.NONE, per_user: Ordering.PER_USER }, "none");
  expect([Ordering.UNSPECIFIED, Ordering.NONE, Ordering.PER_USER].map((value) => orderings.nameOf(value))).toEqual([
    "none",
    "none",
    "per_user",
  ]);
  expect(orderings.valueOf("per_user")).toBe(Ordering.PER_USER);
  expect(orderings.valueOf("none")).toBe(Ordering.NONE);
});

test("a value this build does not know has no name, and UNSPECIFIED is known even without one", () => {
  const modes = protoEnumNames<PlanMode, "off" | "block">({ off: PlanMode.OFF, block: PlanMode.BLOCK });
  expect(modes.nameOf(PlanMode.UNSPECIFIED)).toBeUndefined();
  expect(modes.knows(PlanMode.UNSPECIFIED)).toBe(true);
  expect(modes.knows(99 as PlanMode)).toBe(false);
  expect(modes.nameOf(99 as PlanMode)).toBeUndefined();
  expect(modes.knows(PlanMode.BLOCK)).toBe(true);
});

test("a table from the domain's names, each the enum's own name in lower case", () => {
  const table = lowerCaseNames<HookVerifierName, HookVerifier>(HookVerifier, hookVerifierNames);
  expect(Object.keys(table)).toEqual([...hookVerifierNames]);
  expect(table.standard_webhooks).toBe(HookVerifier.STANDARD_WEBHOOKS);
  expect(Object.values(table).every((value) => typeof value === "number" && value > 0)).toBe(true);
  // A name the enum lacks does not compile.
  // @ts-expect-error "stripe_v2" is no HookVerifier
  lowerCaseNames<"stripe" | "stripe_v2", HookVerifier>(HookVerifier, ["stripe", "stripe_v2"]);
});
