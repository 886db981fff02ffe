import { expect, test } from "vitest";
import { fitIdentifier, maxIdentifierBytes, quoteIdent, snakeCase, warehouseName } from "../../src/warehouse/identifiers.js";

test("names become snake_case the way the warehouse layout writes them", () => {
  expect(snakeCase("Order Completed")).toBe("order_completed");
  expect(snakeCase("userId")).toBe("user_id");
  expect(snakeCase("HTTPRequest sent")).toBe("http_request_sent");
  expect(snakeCase("  VIP-Customers 2024 ")).toBe("vip_customers_2024");
  expect(snakeCase("Größe")).toBe("größe");
});

test("a hostile name is just a name: its quotes and semicolons are gone", () => {
  expect(snakeCase('x"; DROP TABLE tracks; --')).toBe("x_drop_table_tracks");
  expect(quoteIdent('x"; DROP TABLE tracks; --')).toBe('"x""; DROP TABLE tracks; --"');
  expect(() => quoteIdent("a\u0000b")).toThrow(/NUL/);
});

test("a name with no letter or digit still gets a column of its own", () => {
  const a = snakeCase("!!!");
  const b = snakeCase("???");
  expect(a).toMatch(/^_[0-9a-f]{8}$/);
  expect(a).not.toBe(b);
});

test("names over 63 bytes are cut with a hash suffix; two long names that share a start stay apart", () => {
  const long = "a".repeat(100);
  const cut = fitIdentifier(long);
  expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(maxIdentifierBytes);
  expect(cut).toMatch(/^a+_[0-9a-f]{8}$/);
  expect(fitIdentifier(`${long}x`)).not.toBe(cut);
  expect(fitIdentifier("short")).toBe("short");
  expect(fitIdentifier("b".repeat(63))).toBe("b".repeat(63));
});

test("multi-byte names are cut on a character boundary", () => {
  const cut = warehouseName("é".repeat(40));
  expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(maxIdentifierBytes);
  expect(cut).not.toContain("\uFFFD");
  expect(cut.startsWith("é")).toBe(true);
});
