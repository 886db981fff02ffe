import { expect, test } from "vitest";
import { explainFate } from "../../src/routing/fates.js";

const at = (minute: number) => new Date(Date.UTC(2026, 10, 25, 6, minute));
const base = { recorded: null, destinationCreatedAt: at(0), callReceivedAt: at(5), connected: true };

test("a delivery's state is the fate, with its id and attempts", () => {
  expect(explainFate({ ...base, delivery: { id: "7", status: "failed", attemptCount: 3 } })).toEqual({
    fate: "failed",
    reason: "",
    deliveryId: "7",
    attemptCount: 3,
  });
});

test("a reason recorded when routed wins over today's facts", () => {
  expect(explainFate({ ...base, recorded: { fate: "filtered", reason: "filter" } })).toMatchObject({ fate: "filtered", reason: "filter" });
  expect(explainFate({ ...base, recorded: { fate: "disabled", reason: null } })).toMatchObject({ fate: "disabled", reason: "" });
  expect(explainFate({ ...base, recorded: { fate: "integrations_off", reason: null } }).fate).toBe("integrations_off");
});

test("a transform's drop reads as filtered, not as the cancelled delivery it left", () => {
  const dropped = explainFate({
    ...base,
    delivery: { id: "9", status: "cancelled", attemptCount: 0 },
    recorded: { fate: "filtered", reason: "transform" },
  });
  expect(dropped).toEqual({ fate: "filtered", reason: "transform", deliveryId: "9", attemptCount: 0 });
  // Backfilled or replayed later: the delivery tells.
  expect(
    explainFate({
      ...base,
      delivery: { id: "9", status: "delivered", attemptCount: 1 },
      recorded: { fate: "filtered", reason: "transform" },
    }).fate,
  ).toBe("delivered");
});

test("without a delivery or a record: created later, else not connected", () => {
  expect(explainFate({ ...base, destinationCreatedAt: at(6) }).fate).toBe("created_later");
  expect(explainFate(base).fate).toBe("not_connected");
});

test("a destination created later but not connected to the call's source is not connected", () => {
  expect(explainFate({ ...base, destinationCreatedAt: at(6), connected: false }).fate).toBe("not_connected");
});
