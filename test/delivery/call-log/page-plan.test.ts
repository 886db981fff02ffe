import { expect, test } from "vitest";
import type { LoggedCall, LogPage, LogWindow } from "../../../src/db/call-log/log-read.js";
import { batchWaitUntil, planPage } from "../../../src/delivery/call-log/page-plan.js";

const window: LogWindow = { seen: "100:100:", upTo: null, after: { xid: "0", id: "0" } };
const at = new Date("2026-12-07T10:00:00Z");

function call(id: number, userId: string | null, receivedAt = at, payload = "{}"): LoggedCall {
  return {
    position: { xid: "120", id: String(id) },
    messagePk: String(id),
    messageId: `m${id}`,
    type: "track",
    userId,
    receivedAt,
    sentAt: null,
    payload,
    traceparent: null,
    tracestate: null,
    routedPerCall: false,
  };
}

const page = (calls: LoggedCall[]): LogPage => ({ calls, upTo: "130:130:" });
const base = { window, pageSize: 1_000, ordered: false };

test("a page of fewer calls than the kind's batch, the last there are, waits until its first call is that old; then, or flushing, it goes", () => {
  const batchWindow = { calls: 100, waitMs: 500 };
  const wait = { sendable: 2, endsBurst: true, firstReceivedMs: at.getTime(), batchWindow, flushing: false };
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime() + 100 })).toBe(at.getTime() + 500);
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime() + 500 })).toBeUndefined();
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime(), flushing: true })).toBeUndefined();
  // More to read, a kind that sends what it is given, a full batch, or nothing to send: no wait.
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime(), endsBurst: false })).toBeUndefined();
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime(), batchWindow: undefined })).toBeUndefined();
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime(), sendable: 100 })).toBeUndefined();
  expect(batchWaitUntil({ ...wait, nowMs: at.getTime(), sendable: 0 })).toBeUndefined();
});

test("a short page ends the burst: the next read starts from its bound; a full one goes on past its last call", () => {
  const short = planPage({ ...base, page: page([call(1, "a")]) });
  expect(short).toMatchObject({ next: { seen: "130:130:", upTo: null, after: { xid: "0", id: "0" } } });
  const full = planPage({ ...base, pageSize: 1, page: page([call(1, "a")]) });
  expect(full).toMatchObject({ next: { seen: "100:100:", upTo: "130:130:", after: { xid: "120", id: "1" } } });
});

test("per-user ordering: a page ends before a user's second call (an anonymous one's too), and the burst goes on from there", () => {
  const calls = [call(1, "a"), call(2, "b"), call(3, null, at, '{"anonymousId":"x"}'), call(4, "a"), call(5, "c")];
  const plan = planPage({ ...base, ordered: true, page: page(calls) });
  expect(plan).toMatchObject({ next: { seen: "100:100:", upTo: "130:130:", after: { xid: "120", id: "3" } } });
  expect(plan.page.calls.map((c) => c.messagePk)).toEqual(["1", "2", "3"]);
  const anonymous = [call(1, null, at, '{"anonymousId":"x"}'), call(2, null, at, '{"anonymousId":"x"}')];
  const second = planPage({ ...base, ordered: true, page: page(anonymous) });
  expect(second.page.calls.length).toBe(1);
  // Without ordering the page goes whole.
  const whole = planPage({ ...base, page: page(calls) });
  expect(whole.page.calls.length).toBe(5);
});
