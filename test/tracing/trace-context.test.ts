import { expect, test } from "vitest";
import { formatTraceparent, parseTraceparent, readTraceContext } from "../../src/tracing/trace-context.js";

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const parentId = "00f067aa0ba902b7";
const valid = `00-${traceId}-${parentId}-01`;

test("a valid traceparent is parsed into its ids and flags", () => {
  expect(parseTraceparent(valid)).toEqual({ version: "00", traceId, parentId, flags: 1 });
  expect(parseTraceparent(`00-${traceId}-${parentId}-00`)?.flags).toBe(0);
  // A later version may carry more fields after a dash.
  expect(parseTraceparent(`01-${traceId}-${parentId}-01-future`)?.version).toBe("01");
});

test("what the W3C format refuses is not a traceparent", () => {
  for (const value of [
    undefined,
    null,
    "",
    `00-${traceId}-${parentId}`,
    `00-${traceId.toUpperCase()}-${parentId}-01`,
    `00-${"0".repeat(32)}-${parentId}-01`,
    `00-${traceId}-${"0".repeat(16)}-01`,
    `ff-${traceId}-${parentId}-01`,
    `00-${traceId}-${parentId}-01-more`,
    `01-${traceId}-${parentId}-01x`,
    `00_${traceId}-${parentId}-01`,
    ` ${valid}`,
    `01-${traceId}-${parentId}-01-${"a".repeat(300)}`,
  ]) {
    expect(parseTraceparent(value), String(value)).toBeUndefined();
  }
});

test("a tracestate is kept only beside a valid traceparent, printable and within 512 characters", () => {
  expect(readTraceContext(valid, "a=1,b=2")).toEqual({ traceparent: valid, tracestate: "a=1,b=2" });
  expect(readTraceContext(valid, undefined)).toEqual({ traceparent: valid });
  expect(readTraceContext(valid, "  ")).toEqual({ traceparent: valid });
  expect(readTraceContext(valid, `a=${"x".repeat(511)}`)).toEqual({ traceparent: valid });
  expect(readTraceContext(valid, "a=\u00e9")).toEqual({ traceparent: valid });
  expect(readTraceContext("garbage", "a=1")).toBeUndefined();
});

test("a span context is written as a version-00 traceparent", () => {
  expect(formatTraceparent(traceId, parentId, 1)).toBe(valid);
  expect(formatTraceparent(traceId, parentId, 0)).toBe(`00-${traceId}-${parentId}-00`);
});
