import { expect, test } from "vitest";
import { coerce, inferType } from "../../src/warehouse/column-types.js";

test("types come from the first value", () => {
  expect(inferType(42)).toBe("bigint");
  expect(inferType(4.5)).toBe("double precision");
  expect(inferType(2 ** 60)).toBe("double precision");
  expect(inferType(true)).toBe("boolean");
  expect(inferType("2026-11-22T10:04:05.123Z")).toBe("timestamptz");
  expect(inferType("2026-11-22T10:04:05+02:00")).toBe("timestamptz");
  expect(inferType("2026-13-45T10:04:05Z")).toBe("text");
  expect(inferType("hello")).toBe("text");
  expect(inferType(["a", 1])).toBe("jsonb");
});

test("a value that does not fit its column is a mismatch", () => {
  expect(coerce(4.5, "bigint")).toEqual({ ok: false });
  expect(coerce("12", "bigint")).toEqual({ ok: false });
  expect(coerce("yesterday", "timestamptz")).toEqual({ ok: false });
  expect(coerce(1, "boolean")).toEqual({ ok: false });
  expect(coerce("a\u0000b", "text")).toEqual({ ok: false });
});

test("values that fit are given as text parameters", () => {
  expect(coerce(12, "bigint")).toEqual({ ok: true, value: "12" });
  expect(coerce(12, "double precision")).toEqual({ ok: true, value: "12" });
  expect(coerce(7, "text")).toEqual({ ok: true, value: "7" });
  expect(coerce([1, "a"], "jsonb")).toEqual({ ok: true, value: '[1,"a"]' });
  expect(coerce(null, "bigint")).toEqual({ ok: true, value: null });
});
