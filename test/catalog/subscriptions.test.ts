import { expect, test } from "vitest";
import { compileSubscriptions, subscriptionError } from "../../src/catalog/subscriptions.js";

// Subscriptions in the catalog's own language, parsed once and matched
// against the Segment-shaped call; what the catalog's parser lets through
// at the end of the text is refused as unfinished.

test("the catalog's language: conditions, groups, properties, comparisons", () => {
  const compiled = compileSubscriptions([
    { name: "a", subscribe: 'type = "track" and event = "Order Completed"', enabled: true },
    { name: "b", subscribe: 'type = "identify" or (type = "track" and properties.total > 40)', enabled: true },
    { name: "c", subscribe: 'type = "track"', enabled: false },
  ]);
  expect(compiled.matching({ type: "track", event: "Order Completed", properties: { total: 42 } })).toEqual([0, 1]);
  expect(compiled.matching({ type: "track", event: "Signed Up", properties: { total: 1 } })).toEqual([]);
  expect(compiled.matchesAny({ type: "identify" })).toBe(true);
  expect(compiled.matchesAny({ type: "page" })).toBe(false);
});

test("what does not parse, or is unfinished, is refused with a reason; complete text is not", () => {
  expect(subscriptionError("")).toBe("must not be empty");
  expect(subscriptionError('event = "a" and type')).toBe("Value token is missing");
  expect(subscriptionError("type = ")).toBe('ends with "=": the comparison has no value');
  expect(subscriptionError('type = "page" and')).toBe('ends with "and": a condition is missing after it');
  expect(subscriptionError('type = "page" or')).toBe('ends with "or": a condition is missing after it');
  expect(subscriptionError('type = "page" )')).toBe('has a ")" with no "(" before it');
  expect(subscriptionError('type = "track" and event = "eos"')).toBeUndefined();
  expect(subscriptionError('type = "track" and (event = "a" or event = "b")')).toBeUndefined();
  expect(subscriptionError("properties.total > 5")).toBeUndefined();
});
