import { expect, test } from "vitest";
import { flatten } from "../../src/warehouse/flatten.js";
import { changeOf, eventTable, type TableRow } from "../../src/warehouse/layout.js";

const receivedAt = new Date("2026-11-22T10:04:06.000Z");
const values = (row: TableRow | undefined) => Object.fromEntries([...(row?.cells ?? [])].map(([k, c]) => [k, c.value]));

test("context is flattened into snake_case columns joined by _", () => {
  const columns = flatten({ page: { path: "/a", refererURL: "x" }, library: { name: "n" }, tags: ["a"], gone: null }, "context");
  expect(Object.fromEntries(columns)).toEqual({
    context_page_path: "/a",
    context_page_referer_url: "x",
    context_library_name: "n",
    context_tags: ["a"],
  });
});

test("a track goes to tracks (common columns only) and to its event's table (properties without prefix)", () => {
  const change = changeOf(
    {
      type: "track",
      userId: "u1",
      event: "Order Completed",
      properties: { total: 30.5, orderId: "o1", id: "p1" },
      context: { library: { name: "web" } },
      timestamp: "2026-11-22T10:04:05.123Z",
      messageId: "m1",
      anonymousId: "a1",
    },
    receivedAt,
  );
  if (change.kind !== "rows") throw new Error("expected rows");
  const [tracks, event] = change.rows;
  expect(tracks!.table).toBe("tracks");
  expect(values(tracks)).toEqual({
    id: "m1",
    received_at: "2026-11-22T10:04:06.000Z",
    timestamp: "2026-11-22T10:04:05.123Z",
    original_timestamp: "2026-11-22T10:04:05.123Z",
    user_id: "u1",
    anonymous_id: "a1",
    context_library_name: "web",
    event: "order_completed",
    event_text: "Order Completed",
    event_table: "order_completed",
  });
  expect(event!.table).toBe("order_completed");
  // A property named like a fixed column gets a leading _.
  expect(values(event)).toMatchObject({ id: "m1", total: 30.5, order_id: "o1", _id: "p1", event_text: "Order Completed" });
  expect(event!.cells.get("total")!.type).toBe("double precision");
});

test("identify writes identifies and merges the user's traits into users", () => {
  const change = changeOf(
    {
      type: "identify",
      userId: "u1",
      traits: { plan: "pro", seats: 3 },
      context: {},
      timestamp: "2026-11-22T10:04:05.123Z",
      messageId: "m2",
    },
    receivedAt,
  );
  if (change.kind !== "rows") throw new Error("expected rows");
  expect(values(change.rows[0])).toMatchObject({ id: "m2", plan: "pro", seats: 3 });
  expect(values(change.user)).toEqual({ id: "u1", received_at: "2026-11-22T10:04:06.000Z", plan: "pro", seats: 3 });
});

test("page, screen, group and alias have their own columns", () => {
  const base = { context: {}, timestamp: "2026-11-22T10:04:05.123Z", messageId: "m" };
  const rows = (body: Record<string, unknown>) => {
    const change = changeOf({ ...base, ...body }, receivedAt);
    return change.kind === "rows" ? change.rows : [];
  };
  expect(values(rows({ type: "page", userId: "u", name: "Home", category: "c", properties: { path: "/" } })[0])).toMatchObject({
    name: "Home",
    category: "c",
    path: "/",
  });
  expect(rows({ type: "screen", userId: "u", name: "S" })[0]!.table).toBe("screens");
  expect(values(rows({ type: "group", userId: "u", groupId: "g", traits: { size: 3 } })[0])).toMatchObject({ group_id: "g", size: 3 });
  expect(values(rows({ type: "alias", "Previous ID": "old", "User ID": "new" })[0])).toMatchObject({ previous_id: "old", user_id: "new" });
});

test("a delete notification deletes its user", () => {
  expect(changeOf({ type: "delete", userId: "u1", timestamp: "2026-11-22T10:04:05.123Z" }, receivedAt)).toEqual({
    kind: "delete",
    userId: "u1",
  });
});

test("event tables: hostile names are plain names, the layout's own table names are prefixed, long names are cut", () => {
  expect(eventTable('x"; DROP TABLE tracks; --')).toBe("x_drop_table_tracks");
  expect(eventTable("Users")).toBe("_users");
  expect(Buffer.byteLength(eventTable("Checkout ".repeat(20)))).toBeLessThanOrEqual(63);
});

test("keys that make one column name keep both values, whatever their order", () => {
  const a = Object.fromEntries(flatten({ orderId: 1, order_id: 2, address: { City: "x" }, address_city: "y" }));
  const b = Object.fromEntries(flatten({ address_city: "y", order_id: 2, address: { City: "x" }, orderId: 1 }));
  expect(a).toEqual(b);
  expect(a.order_id).toBe(2);
  expect(a.address_city).toBe("y");
  expect(Object.values(a).sort()).toEqual([1, 2, "x", "y"]);
  // A property named like a fixed column (it becomes `_id`), beside one whose snake_case form is the same.
  const change = changeOf({ type: "track", event: "E", messageId: "m", properties: { id: "p", _id: "q" } }, receivedAt);
  if (change.kind !== "rows") throw new Error("expected rows");
  const event = values(change.rows[1]);
  expect(event._id).toBe("p");
  expect(Object.values(event)).toContain("q");
});

test("the suffixed column of a colliding key is the documented one", () => {
  expect([...flatten({ orderId: "a", order_id: "b" }).keys()].sort()).toEqual(["order_id", "order_id_120559ff"]);
});
