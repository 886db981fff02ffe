import { expect, test } from "vitest";
import { cutUtf8, maxKeptRequestBody, sentRequestOf } from "../../../../src/delivery/kinds/integration/outcomes.js";
import type { VendorRequestRecord } from "../../../../src/catalog/catalog-fetch.js";

// What an attempt keeps of a request it sent: the body cut at its bound on a
// character boundary, its full size kept, one kept copy per request (the
// calls of a batch share it).
function record(body: string): VendorRequestRecord {
  return {
    method: "POST",
    url: "https://vendor.example/x",
    headers: { authorization: "***" },
    body,
    attemptedAt: new Date(0),
    status: 200,
    error: null,
    latencyMs: 1,
    responseBody: "{}",
  };
}

test("a body within the bound is kept whole, with its size in bytes", () => {
  const kept = sentRequestOf(record('{"a":"ü"}'));
  expect(kept).toEqual({ headers: { authorization: "***" }, body: '{"a":"ü"}', bodyBytes: 10 });
});

test("a larger body is cut at the bound, never inside a character; the size says how large it was", () => {
  const body = `${"x".repeat(maxKeptRequestBody - 1)}€and more`;
  const kept = sentRequestOf(record(body));
  expect(kept.body).toBe("x".repeat(maxKeptRequestBody - 1));
  expect(kept.bodyBytes).toBe(Buffer.byteLength(body));
});

test("cutUtf8 keeps whole characters of every width", () => {
  expect(cutUtf8("aü", 2)).toBe("a");
  expect(cutUtf8("aü", 3)).toBe("aü");
  expect(cutUtf8("a€", 3)).toBe("a");
  expect(cutUtf8("a😀b", 4)).toBe("a");
  expect(cutUtf8("a😀b", 5)).toBe("a😀");
});

test("the calls of one request share one kept copy", () => {
  const r = record("y".repeat(maxKeptRequestBody * 2));
  expect(sentRequestOf(r)).toBe(sentRequestOf(r));
});
