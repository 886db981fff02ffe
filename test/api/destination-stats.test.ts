import { expect } from "vitest";
import { heldBackPerMinuteQuery } from "../../src/db/queries/message-fates.js";
import { testWith } from "../helpers/fixtures.js";
import { ManualClock } from "../helpers/server.js";

// Calls a destination's rules held back, counted by reason in its stats
// (the same windows as its other figures): routed for real through a
// filter and consent categories, with older fates of other reasons
// recorded at chosen times.
const minute = 60_000;
const hour = 60 * minute;
const clock = new ManualClock(new Date("2026-11-22T10:00:10Z"));
const test = testWith({ server: { clock } });

const consent = (categories: Record<string, boolean>) => ({ consent: { categoryPreferences: categories } }) as never;

test("held-back calls are counted by reason over the hour, 6 hours and 24 hours; filtered is their sum", async ({ server, receiver }) => {
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "held back",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    filter: { event: { $ne: "skip" } },
    consentCategories: ["Advertising"],
  });
  const tracking = server.tracking(source.writeKey);
  const { messageIds } = await tracking.batch({
    batch: [
      { type: { case: "track", value: { userId: "u", event: "skip", context: consent({ Advertising: true }) } } },
      { type: { case: "track", value: { userId: "u", event: "skip", context: consent({ Advertising: true }) } } },
      { type: { case: "track", value: { userId: "u", event: "keep", context: consent({ Advertising: false }) } } },
    ],
  });
  // Older fates of every other reason: 3 hours ago (in 6 h and 24 h), 20 hours ago (in 24 h), 2 days ago (in none).
  const record = async (messageId: string, fate: string, reason: string | null, agoMs: number) => {
    await server.pool.query(
      `INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at)
       SELECT id, $2, $3, $4, $5 FROM messages WHERE message_id = $1
       ON CONFLICT (message_pk, destination_id) DO UPDATE SET fate = $3, reason = $4, recorded_at = $5`,
      [messageId, destination.id, fate, reason, new Date(clock.now().getTime() - agoMs)],
    );
  };
  const older = await tracking.batch({
    batch: ["a", "b", "c", "d"].map((event) => ({ type: { case: "track" as const, value: { userId: "u", event } } })),
  });
  const [a, b, c, d] = older.messageIds as [string, string, string, string];
  await record(a, "filtered", "subscriptions", 3 * hour);
  await record(b, "disabled", null, 3 * hour);
  await record(c, "integrations_off", null, 20 * hour);
  await record(d, "filtered", "transform", 48 * hour);

  const stats = await server.deliveries.getDestinationStats({ destinationId: destination.id });
  expect(messageIds).toHaveLength(3);
  const zero = { filter: 0n, consent: 0n, subscriptions: 0n, transform: 0n, disabled: 0n, integrationsOff: 0n };
  const [lastHour, last6h, lastDay] = stats.windows.map((w) => ({ ...w.heldBack }));
  expect(lastHour).toMatchObject({ ...zero, filter: 2n, consent: 1n });
  expect(last6h).toMatchObject({ ...zero, filter: 2n, consent: 1n, subscriptions: 1n, disabled: 1n });
  expect(lastDay).toMatchObject({ ...zero, filter: 2n, consent: 1n, subscriptions: 1n, disabled: 1n, integrationsOff: 1n });
  expect({ ...stats.heldBackLast24h }).toMatchObject(lastDay!);
  // Filtered stays what it was: filter, consent, subscriptions and transform (not disabled or integrations off).
  expect(stats.windows.map((w) => w.filtered)).toEqual([3n, 4n, 4n]);
  expect(stats.filteredLast24h).toBe(4n);
});

test("the count by reason reads the fates' index alone (the reason rides in it)", async ({ server }) => {
  const query = heldBackPerMinuteQuery("00000000-0000-0000-0000-000000000000", new Date());
  const client = await server.pool.connect();
  try {
    // The test's table is tiny: the planner would read it whole; what must hold is that the index answers alone.
    await client.query("SET enable_seqscan = off");
    await client.query("SET enable_bitmapscan = off");
    const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${query.text}`, query.values);
    expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toContain("Index Only Scan using call_fates_search_idx");
  } finally {
    await client.query("RESET ALL");
    client.release();
  }
});
