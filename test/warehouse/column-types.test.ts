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
  expect(coerce(4.5, "bigint")).toEqual({ ok: false, reason: "does not fit the bigint column" });
  expect(coerce("12", "bigint")).toMatchObject({ ok: false });
  expect(coerce("yesterday", "timestamptz")).toEqual({ ok: false, reason: "is not a valid date-time for the timestamptz column" });
  expect(coerce(1, "boolean")).toMatchObject({ ok: false });
  expect(coerce("a\u0000b", "text")).toMatchObject({ ok: false, reason: expect.stringContaining("NUL") });
});

test("values that fit are given as text parameters", () => {
  expect(coerce(12, "bigint")).toEqual({ ok: true, value: "12" });
  expect(coerce(12, "double precision")).toEqual({ ok: true, value: "12" });
  expect(coerce(7, "text")).toEqual({ ok: true, value: "7" });
  expect(coerce([1, "a"], "jsonb")).toEqual({ ok: true, value: '[1,"a"]' });
  expect(coerce(null, "bigint")).toEqual({ ok: true, value: null });
});

test("a date-time is checked against the calendar: impossible dates and year 0000 are not timestamps", () => {
  for (const impossible of [
    "2026-02-30T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "2025-04-31T10:00:00Z",
    "0000-01-01T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T10:60:00Z",
    "2026-01-01T10:00:00+16:00",
    // The form toISOString writes, which is checked without the regex: the same rules.
    "2026-02-30T00:00:00.000Z",
    "0000-01-01T00:00:00.000Z",
    "2026-01-01T24:00:00.000Z",
    "2026-13-01T00:00:00.000Z",
    "2026-01-01T00:00:00.0a0Z",
    "2026-01-01X00:00:00.000Z",
  ]) {
    expect(inferType(impossible), impossible).toBe("text");
    expect(coerce(impossible, "timestamptz"), impossible).toMatchObject({ ok: false });
  }
  for (const fine of [
    "2024-02-29T00:00:00Z",
    "2000-02-29 23:59:59.999999+15:59",
    "0001-01-01T00:00Z",
    "2026-11-28T09:00:00.000Z",
    "2024-02-29T23:59:59.999Z",
  ]) {
    expect(inferType(fine), fine).toBe("timestamptz");
  }
});
