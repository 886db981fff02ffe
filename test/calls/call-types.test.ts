import { expect, test } from "vitest";
import { callTypes, isCallType, type CallType, type TypeField, typeFields, unknownCallType } from "../../src/calls/call.js";

// The type-level half of this file is checked by `tsc -p test/tsconfig.json`
// (npm run lint): each `@ts-expect-error` below must meet an error, or the
// check fails with "Unused '@ts-expect-error' directive". So these lines
// prove the compiler, not a test, finds a call type left out.

// A table of each type's fields that forgets one type does not compile.
// @ts-expect-error alias is missing from the Record<CallType, ...>
const incompleteTable: Record<CallType, readonly TypeField[]> = {
  identify: ["traits"],
  track: ["event", "properties"],
  page: ["name", "category", "properties"],
  screen: ["name", "properties"],
  group: ["groupId", "traits"],
};

/** A switch that forgets a type: its `default` hands unknownCallType an "alias", not a `never`. */
function bodyKeyOf(type: CallType): string {
  switch (type) {
    case "identify":
    case "group":
      return "traits";
    case "track":
    case "page":
    case "screen":
      return "properties";
    default:
      // @ts-expect-error type is "alias" here, which is not never
      return unknownCallType(type);
  }
}

test("the table of each type's fields has every call type and nothing else", () => {
  expect(Object.keys(typeFields).sort()).toEqual([...callTypes].sort());
  expect(Object.keys(incompleteTable)).not.toContain("alias");
});

test("a switch that missed a type fails loudly at run time too", () => {
  expect(bodyKeyOf("track")).toBe("properties");
  expect(() => bodyKeyOf("alias")).toThrow('unknown call type "alias"');
});

test("isCallType accepts the call types only, not inherited keys", () => {
  for (const type of callTypes) expect(isCallType(type)).toBe(true);
  for (const other of ["delete", "toString", "__proto__", "", 1, undefined, null]) expect(isCallType(other)).toBe(false);
});
