import { expect, test } from "vitest";
import { InvalidInputError } from "../../src/errors.js";
import { compileConsent, validateConsentCategories } from "../../src/routing/consent.js";

/** A stored body whose context.consent.categoryPreferences is `preferences` (absent when undefined). */
function callWith(preferences?: unknown): Record<string, unknown> {
  if (preferences === undefined) return { type: "track", event: "E", context: { ip: "1.2.3.4" } };
  return { type: "track", event: "E", context: { consent: { categoryPreferences: preferences } } };
}

const granted = { Advertising: true, Analytics: true, Functional: false };

// Every combination: preferences an object (listed categories all true, one
// false, one missing, one truthy but not true), absent, or not an object;
// requireConsent on or off; the destination's categories empty or not.
const cases: Array<[string, unknown, string[], boolean, boolean]> = [
  ["object, every category true", callWith(granted), ["Advertising", "Analytics"], false, true],
  ["object, every category true, consent required", callWith(granted), ["Advertising", "Analytics"], true, true],
  ["object, one category false", callWith(granted), ["Advertising", "Functional"], false, false],
  ["object, one category false, consent required", callWith(granted), ["Advertising", "Functional"], true, false],
  ["object, one category missing", callWith(granted), ["Advertising", "Marketing"], false, false],
  ["object, one category missing, consent required", callWith(granted), ["Marketing"], true, false],
  ['object, a category "true" (a string)', callWith({ Advertising: "true" }), ["Advertising"], false, false],
  ["object, a category 1", callWith({ Advertising: 1 }), ["Advertising"], false, false],
  ["object, no categories listed", callWith({ Advertising: false }), [], false, true],
  ["absent, no categories listed", callWith(), [], false, true],
  ["object, no categories listed, consent required", callWith({ Advertising: false }), [], true, true],
  ["empty object, consent required", callWith({}), [], true, true],
  ["empty object, a category listed", callWith({}), ["Advertising"], false, false],
  ["absent", callWith(), ["Advertising"], false, true],
  ["absent, consent required", callWith(), ["Advertising"], true, false],
  ["absent, no categories, consent required", callWith(), [], true, false],
  ["null", callWith(null), ["Advertising"], false, true],
  ["null, consent required", callWith(null), ["Advertising"], true, false],
  ["an array", callWith(["Advertising"]), ["Advertising"], false, true],
  ["an array, consent required", callWith(["Advertising"]), ["Advertising"], true, false],
  ["a string", callWith("Advertising"), ["Advertising"], false, true],
  ["a string, consent required", callWith("Advertising"), [], true, false],
  ["context.consent not an object", { type: "track", context: { consent: "yes" } }, ["Advertising"], true, false],
  ["no context at all", { type: "track" }, ["Advertising"], false, true],
];

test.each(cases)("preferences %s (%j): categories %j, requireConsent %s → routed %s", (_name, body, categories, required, routed) => {
  const consent = compileConsent({ categories, required });
  // No categories and consent not required: no check at all, so every call is routed.
  expect(consent === undefined ? true : consent(body)).toBe(routed);
});

test("no categories and consent not required: no check at all (every call is routed)", () => {
  expect(compileConsent({ categories: [], required: false })).toBeUndefined();
});

test("categories are matched exactly (case, spaces), and an inherited key is not a preference", () => {
  const consent = compileConsent({ categories: ["advertising"], required: false })!;
  expect(consent(callWith({ Advertising: true }))).toBe(false);
  expect(compileConsent({ categories: ["Ads "], required: false })!(callWith({ Ads: true }))).toBe(false);
  expect(compileConsent({ categories: ["constructor"], required: false })!(callWith({}))).toBe(false);
  expect(compileConsent({ categories: ["__proto__"], required: false })!(callWith(JSON.parse('{"__proto__": true}')))).toBe(true);
});

test("categories are validated: at most 20, each 1 to 100 characters of storable text, repeats dropped", () => {
  const refusal = (categories: string[]) => {
    try {
      validateConsentCategories("destination.consentCategories", categories);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidInputError);
      return (error as Error).message;
    }
    throw new Error("not refused");
  };
  expect(validateConsentCategories("c", ["Ads", "Analytics", "Ads"])).toEqual(["Ads", "Analytics"]);
  expect(validateConsentCategories("c", [])).toEqual([]);
  expect(validateConsentCategories("c", ["x".repeat(100)])).toHaveLength(1);
  expect(refusal(Array.from({ length: 21 }, (_, i) => `c${i}`))).toBe("destination.consentCategories: at most 20 categories, not 21");
  expect(refusal(["a", "b", "c", ""])).toBe("destination.consentCategories[3]: must not be empty");
  expect(refusal(["a", "x".repeat(101)])).toBe("destination.consentCategories[1]: is longer than 100 characters");
  expect(refusal(["a\0b"])).toBe("destination.consentCategories[0]: must not contain NUL characters");
});
