import { describe, expect, test } from "vitest";
import { InvalidInputError } from "../../src/errors.js";
import { compileFilter } from "../../src/routing/filter.js";

const order = {
  type: "track",
  event: "Order Completed",
  userId: "u1",
  properties: { total: 150, currency: "EUR", tags: ["vip", "new"], note: null },
  context: { page: { path: "/checkout/done" } },
  traits: { email: "ann@example.com" },
};

const matches = (filter: unknown, body: unknown = order) => compileFilter(filter)(body);

function errorOf(filter: unknown): string {
  try {
    compileFilter(filter, "destination.filter");
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error("compiled");
}

describe("operators", () => {
  test.each([
    [{ type: "track" }, true],
    [{ type: "identify" }, false],
    [{ "properties.tags": ["vip", "new"] }, true],
    [{ "properties.note": null }, true],
    [{ "properties.total": { $eq: 150 } }, true],
    [{ "properties.total": { $ne: 150 } }, false],
    [{ "properties.total": { $gt: 100 } }, true],
    [{ "properties.total": { $gt: 150 } }, false],
    [{ "properties.total": { $gte: 150 } }, true],
    [{ "properties.total": { $lt: 150 } }, false],
    [{ "properties.total": { $lte: 150 } }, true],
    [{ "properties.total": { $gt: 100, $lt: 200 } }, true],
    [{ event: { $in: ["Order Completed", "Order Refunded"] } }, true],
    [{ event: { $nin: ["Order Completed"] } }, false],
    [{ "traits.email": { $exists: true } }, true],
    [{ "traits.phone": { $exists: true } }, false],
    [{ "traits.email": { $endsWith: "@example.com" } }, true],
    [{ "context.page.path": { $startsWith: "/checkout" } }, true],
    [{ "context.page.path": { $startsWith: "/cart" } }, false],
    [{ "traits.email": { $contains: "ann@" } }, true],
    [{ "properties.tags": { $contains: "vip" } }, true],
    [{ "properties.tags": { $contains: "old" } }, false],
    [{ $and: [{ type: "track" }, { event: "Order Completed" }] }, true],
    [{ $and: [{ type: "track" }, { event: "Other" }] }, false],
    [{ $or: [{ type: "identify" }, { event: "Order Completed" }] }, true],
    [{ $or: [{ type: "identify" }, { event: "Other" }] }, false],
    [{ $not: { "traits.email": { $endsWith: "@example.com" } } }, false],
    [{ type: "track", event: "Other" }, false],
    [{}, true],
  ])("%j is %s", (filter, expected) => {
    expect(matches(filter)).toBe(expected);
  });
});

describe("missing paths match only $exists: false, $ne and $nin", () => {
  test.each([
    [{ "properties.missing": { $exists: false } }, true],
    [{ "properties.missing": { $ne: 1 } }, true],
    [{ "properties.missing": { $nin: [1] } }, true],
    [{ "properties.missing": null }, false],
    [{ "properties.missing": { $eq: null } }, false],
    [{ "properties.missing": { $in: [null] } }, false],
    [{ "properties.missing": { $gt: 0 } }, false],
    [{ "properties.missing": { $lte: 0 } }, false],
    [{ "properties.missing": { $startsWith: "" } }, false],
    [{ "properties.missing": { $contains: "a" } }, false],
    [{ "properties.total.deeper": { $exists: false } }, true],
    [{ "constructor.name": { $exists: true } }, false],
  ])("%j is %s", (filter, expected) => {
    expect(matches(filter)).toBe(expected);
  });
});

describe("a type mismatch is no match, never an error", () => {
  test.each([
    [{ "properties.currency": { $gt: 1 } }],
    [{ "properties.total": { $startsWith: "1" } }],
    [{ "properties.total": { $contains: "1" } }],
    [{ "properties.total": "150" }],
    [{ "properties.tags.length": 2 }],
  ])("%j", (filter) => {
    expect(matches(filter)).toBe(false);
  });
});

describe("errors name the path", () => {
  test.each([
    [{ "properties.total": { $gte: "100" } }, "destination.filter.properties.total.$gte: must be a number"],
    [{ "properties.total": { $regex: "x" } }, "destination.filter.properties.total.$regex: unknown operator"],
    [{ $nor: [] }, "destination.filter.$nor: unknown operator"],
    [{ $and: [] }, "destination.filter.$and: must be a non-empty array of filter documents"],
    [{ $or: [{ type: "track" }, 3] }, "destination.filter.$or[1]: must be an object (a filter document)"],
    [{ $or: [{ x: { $in: 3 } }] }, "destination.filter.$or[0].x.$in: must be an array"],
    [{ $not: [] }, "destination.filter.$not: must be an object (a filter document)"],
    [{ x: { $exists: "yes" } }, "destination.filter.x.$exists: must be true or false"],
    [{ x: { $startsWith: 1 } }, "destination.filter.x.$startsWith: must be a string"],
    [{ x: { $contains: { a: 1 } } }, "destination.filter.x.$contains: must be a string, a number or a boolean"],
    [{ x: { a: 1 } }, "destination.filter.x.a: an object value holds operators only"],
    [{ x: {} }, "destination.filter.x: must be a literal or an object of operators"],
    [{ "a..b": 1 }, "destination.filter.a..b: the path must be dot-separated names"],
    [[], "destination.filter: must be an object"],
  ])("%j", (filter, message) => {
    expect(errorOf(filter)).toContain(message);
  });
});

describe("limits", () => {
  test("100 conditions pass, 101 do not", () => {
    const conditions = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, i]));
    expect(matches(conditions(100), {})).toBe(false);
    expect(errorOf(conditions(101))).toBe("destination.filter.p100: is past the limit of 100 conditions per filter");
  });

  test("depth 8 passes, 9 does not", () => {
    const nested = (depth: number): Record<string, unknown> => (depth === 1 ? { type: "track" } : { $not: { $not: nested(depth - 2) } });
    expect(matches(nested(7))).toBe(true);
    const deep = { $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ type: "track" }] }] }] }] }] }] }] }] };
    expect(errorOf(deep)).toMatch(/\$and\[0\]\.\$and\[0\].*: nests deeper than 8 levels$/);
  });

  test("16 KB", () => {
    expect(errorOf({ x: "a".repeat(17_000) })).toMatch(/^destination\.filter: is \d+ bytes, over the limit of 16384 bytes/);
  });

  test("$in lists hold at most 100 values", () => {
    expect(errorOf({ x: { $in: Array.from({ length: 101 }, (_, i) => i) } })).toBe(
      "destination.filter.x.$in: has 101 values, over the limit of 100",
    );
  });
});
