import { expect, test } from "vitest";
import { defaultCircuitConfig, defaultRetrySchedule } from "../../src/config.js";
import { foldHealth, initialHealth, type HealthEvent, type HealthPolicy } from "../../src/health/circuit.js";

const policy: HealthPolicy = {
  circuit: { ...defaultCircuitConfig, failures: 3, minSpanMs: 60_000, cooldownMs: 30_000, maxCooldownMs: 100_000 },
  retry: defaultRetrySchedule,
};
const t0 = Date.parse("2026-11-22T10:00:00Z");
const at = (s: number) => new Date(t0 + s * 1000);
const fail = (id: string, s: number, extra: Partial<HealthEvent> = {}): HealthEvent =>
  ({ kind: "retryable", deliveryId: id, at: at(s), probe: false, error: "HTTP 503", ...extra }) as HealthEvent;
const ok = (id: string, s: number, probe = false): HealthEvent => ({ kind: "success", deliveryId: id, at: at(s), probe });

test("opens only after N retryable failures spanning at least T", () => {
  const quick = foldHealth(initialHealth("d"), [fail("1", 0), fail("2", 10), fail("3", 20), fail("4", 59)], policy);
  expect(quick.row.state).toBe("closed");
  expect(quick.row.consecutiveFailures).toBe(4);
  const opened = foldHealth(quick.row, [fail("5", 60)], policy);
  expect(opened.row.state).toBe("open");
  expect(opened.transitions.map((t) => t.kind)).toEqual(["opened"]);
  expect(opened.row.probeAt).toEqual(at(90));
  expect(opened.row.cooldownMs).toBe(30_000);
  expect(opened.row.lastError).toBe("HTTP 503");
});

test("a success or a 4xx ends the run; stragglers of an open circuit change nothing", () => {
  const run = foldHealth(initialHealth("d"), [fail("1", 0), fail("2", 100), ok("3", 101), fail("4", 200)], policy);
  expect(run.row).toMatchObject({ state: "closed", consecutiveFailures: 1, firstFailureAt: at(200), lastSuccessAt: at(101) });
  const permanent = foldHealth(run.row, [{ kind: "permanent", deliveryId: "5", at: at(201), probe: false, error: "HTTP 404" }], policy);
  expect(permanent.row).toMatchObject({ consecutiveFailures: 0, lastError: "HTTP 404", lastFailureAt: at(201) });

  const open = foldHealth(initialHealth("d"), [fail("1", 0), fail("2", 30), fail("3", 60)], policy).row;
  const straggler = foldHealth(open, [fail("9", 61)], policy);
  expect(straggler.row.state).toBe("open");
  expect(straggler.row.probeAt).toEqual(open.probeAt);
  expect(straggler.transitions).toEqual([]);
});

test("a failed probe reopens with a doubled cooldown, capped; a successful one closes", () => {
  let row = foldHealth(initialHealth("d"), [fail("1", 0), fail("2", 30), fail("3", 60)], policy).row;
  const cooldowns: number[] = [];
  let s = 90;
  for (let i = 0; i < 4; i++) {
    row = { ...row, state: "half_open", probeDeliveryId: `p${i}`, probeUntil: at(s + 60) };
    const next = foldHealth(row, [fail(`p${i}`, s, { probe: true })], policy);
    expect(next.transitions.map((t) => t.kind)).toEqual(["reopened"]);
    row = next.row;
    cooldowns.push(row.cooldownMs!);
    expect(row.probeAt).toEqual(new Date(at(s).getTime() + row.cooldownMs!));
    s = (row.probeAt!.getTime() - t0) / 1000;
  }
  expect(cooldowns).toEqual([60_000, 100_000, 100_000, 100_000]);
  row = { ...row, state: "half_open", probeDeliveryId: "last" };
  const closed = foldHealth(row, [ok("last", s, true)], policy);
  expect(closed.row).toMatchObject({ state: "closed", consecutiveFailures: 0, probeAt: null, cooldownMs: null });
  expect(closed.transitions[0]).toMatchObject({ kind: "closed", openedAt: at(60) });
});

test("a probe handed back untried is due again at once", () => {
  const open = foldHealth(initialHealth("d"), [fail("1", 0), fail("2", 30), fail("3", 60)], policy).row;
  const half = { ...open, state: "half_open" as const, probeDeliveryId: "p", probeUntil: at(150) };
  const released = foldHealth(half, [{ kind: "probe_released", deliveryId: "p", at: at(91), probe: true }], policy);
  expect(released.row).toMatchObject({ state: "open", probeDeliveryId: null, probeAt: open.probeAt });
});

test("Retry-After holds back the destination, capped; so does a run of 429s", () => {
  const hinted = foldHealth(initialHealth("d"), [fail("1", 0, { retryAfterMs: 120_000 })], policy);
  expect(hinted.row.backoffUntil).toEqual(at(120));
  const capped = foldHealth(initialHealth("d"), [fail("1", 0, { retryAfterMs: 10 * 3_600_000 })], policy);
  expect(capped.row.backoffUntil).toEqual(new Date(t0 + defaultRetrySchedule.maxRetryAfterMs));
  const two = foldHealth(initialHealth("d"), [fail("1", 0, { tooManyRequests: true }), fail("2", 1, { tooManyRequests: true })], policy);
  expect(two.row.backoffUntil).toBeNull();
  const three = foldHealth(two.row, [fail("3", 2, { tooManyRequests: true })], policy);
  expect(three.row.backoffUntil).toEqual(new Date(at(2).getTime() + defaultRetrySchedule.initialDelayMs));
  const four = foldHealth(three.row, [fail("4", 3, { tooManyRequests: true })], policy);
  expect(four.row.backoffUntil).toEqual(new Date(at(3).getTime() + 2 * defaultRetrySchedule.initialDelayMs));
  const broken = foldHealth(four.row, [fail("5", 4), fail("6", 5, { tooManyRequests: true })], policy);
  expect(broken.row.consecutive429s).toBe(1);
});

test("expiries are counted for the operator event", () => {
  const row = foldHealth(initialHealth("d"), [fail("1", 0), { kind: "expired", deliveryId: "1", at: at(0), probe: false }], policy).row;
  expect(row.expiredUnreported).toBe(1);
});
