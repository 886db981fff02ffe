import { beforeAll, expect, test } from "vitest";
import type { FeedPosition } from "../../../../src/db/queries/delivery-search.js";
import { finishDeliveries, seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";
import { describeEachDriver } from "./drivers.js";

// The driver's reads: deliveries with their messages (by id, searched, as
// the finish feed), fates, expiry reports, backlogs, and what a bulk replay
// or a backfill would take. Three calls go to two live destinations and one
// paused one; one delivery is finished with an attempt that sent a changed body.
describeEachDriver("the reads", (driver, db) => {
  const { reads } = driver;
  let sourceId: string;
  let live: string;
  let other: string;
  let off: string;
  let finishedId: string;
  const received = new Date("2026-11-28T12:00:00Z");
  const later = (ms: number) => new Date(received.getTime() + ms);

  beforeAll(async () => {
    sourceId = await seedSource(db.pool);
    live = await seedDestination(db.pool, sourceId, received);
    other = await seedDestination(db.pool, sourceId, received);
    off = await seedDestination(db.pool, sourceId, received, { enabled: false });
    for (const i of [0, 1, 2]) {
      // One batch per call: distinct creation times, so the newest-first order is the calls' order reversed.
      const call = {
        messageId: `call-${i}`,
        type: "track",
        userId: `user-${i}`,
        payload: JSON.stringify({ event: `e${i}` }),
        integrations: undefined,
      };
      await driver.storeMessages(db.pool, sourceId, later(i), [call]);
    }
    const oldest = await db.pool.query<{ id: string }>("SELECT id FROM delivery_queue WHERE destination_id = $1 ORDER BY id LIMIT 1", [
      live,
    ]);
    finishedId = oldest.rows[0]!.id;
    await finishDeliveries(db.pool, live, [finishedId], "delivered", later(5));
    await db.pool.query(
      `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms, sent_body)
       VALUES ($1, $2, 1, 0, 'https://example.com/hook', $3, 'success', 200, 7, '{"changed":true}')`,
      [live, finishedId, later(5)],
    );
  });

  test("selectDelivery: a delivery with its message and the body its last attempt sent", async () => {
    expect(await reads.selectDelivery(db.pool, finishedId)).toMatchObject({
      id: finishedId,
      destination_id: live,
      source_id: sourceId,
      message_id: "call-0",
      type: "track",
      user_id: "user-0",
      status: "delivered",
      payload: '{"event":"e0"}',
      sent_body: '{"changed":true}',
      created_at: received,
    });
    expect(await reads.selectDelivery(db.pool, "999999999")).toBeUndefined();
  });

  test("searchDeliveries: every live destination's deliveries newest first, paged; by destination, message, user and status", async () => {
    const first = await reads.searchDeliveries(db.pool, {}, { limit: 4 });
    const rest = await reads.searchDeliveries(db.pool, {}, { limit: 4, before: { createdAt: first[3]!.cursor_at, id: first[3]!.id } });
    const all = [...first, ...rest];
    expect(all.map((d) => d.message_id)).toEqual(["call-2", "call-2", "call-1", "call-1", "call-0", "call-0"]);
    expect(new Set(all.map((d) => d.id)).size).toBe(6);
    expect(new Set(all.map((d) => d.destination_id))).toEqual(new Set([live, other]));
    expect(all.find((d) => d.id === finishedId)).toMatchObject({ status: "delivered", sent_body: '{"changed":true}' });
    expect(all.find((d) => d.message_id === "call-1")!.payload).toBe('{"event":"e1"}');

    const ofLive = await reads.searchDeliveries(db.pool, { destinationId: live }, { limit: 10 });
    expect(ofLive.map((d) => d.message_id)).toEqual(["call-2", "call-1", "call-0"]);
    const byMessage = await reads.searchDeliveries(db.pool, { messageId: "call-1" }, { limit: 10 });
    expect(byMessage.map((d) => d.destination_id).sort()).toEqual([live, other].sort());
    const byUser = await reads.searchDeliveries(db.pool, { userId: "user-0", statuses: ["delivered"] }, { limit: 10 });
    expect(byUser.map((d) => d.id)).toEqual([finishedId]);
    expect(await reads.searchDeliveries(db.pool, { messageId: "no-such-call" }, { limit: 10 })).toEqual([]);
    expect(await reads.searchDeliveries(db.pool, { destinationId: live, since: later(3) }, { limit: 10 })).toEqual([]);
  });

  test("searchFates: the paused destination's calls, newest first, paged", async () => {
    const search = { destinationId: off, fates: ["disabled", "filtered", "integrations_off"] as const, limit: 2 };
    const first = await reads.searchFates(db.pool, search);
    expect(first.map((f) => [f.message_id, f.event, f.user_id, f.fate])).toEqual([
      ["call-2", "e2", "user-2", "disabled"],
      ["call-1", "e1", "user-1", "disabled"],
    ]);
    const rest = await reads.searchFates(db.pool, {
      ...search,
      before: { recordedAt: first[1]!.cursor_at, messagePk: first[1]!.message_pk },
    });
    expect(rest.map((f) => f.message_id)).toEqual(["call-0"]);
    expect(await reads.searchFates(db.pool, { ...search, fates: ["filtered"] })).toEqual([]);
    expect(await reads.searchFates(db.pool, { destinationId: live, fates: ["disabled"], limit: 10 })).toEqual([]);
  });

  test("selectDestinationBacklogs: unfinished deliveries of every destination, 0 for those without", async () => {
    const backlogs = await reads.selectDestinationBacklogs(db.pool, 10_000);
    expect([live, other, off].map((id) => backlogs.get(id))).toEqual([2, 3, 0]);
  });

  test("takeExpiredReports: each destination's expired count is taken once, and not due again within the interval", async () => {
    await db.pool.query("INSERT INTO destination_health (destination_id, expired_unreported, updated_at) VALUES ($1, 4, $2)", [
      other,
      received,
    ]);
    const now = later(60_000);
    const name = (await db.pool.query<{ name: string }>("SELECT name FROM destinations WHERE id = $1", [other])).rows[0]!.name;
    expect(await reads.takeExpiredReports(db.pool, now, 60_000)).toEqual([{ destinationId: other, name, count: 4, since: null }]);
    expect(await reads.takeExpiredReports(db.pool, now, 60_000)).toEqual([]);
    await db.pool.query("UPDATE destination_health SET expired_unreported = 1 WHERE destination_id = $1", [other]);
    expect(await reads.takeExpiredReports(db.pool, later(90_000), 60_000)).toEqual([]);
    expect(await reads.takeExpiredReports(db.pool, later(120_000), 60_000)).toEqual([{ destinationId: other, name, count: 1, since: now }]);
  });

  test("readFinishFeed: the latest finishes, then exactly what finished since, a page at a time, each once", async () => {
    const early = new Date("2020-01-01T00:00:00Z");
    const destination = await seedDestination(db.pool, sourceId, early);
    const filter = { destinationId: destination };
    const ids = await seedDeliveries(db.pool, destination, await seedMessages(db.pool, sourceId, early, ["a", "b", "c"]), early);
    const start = await reads.readFinishFeed(db.pool, filter, undefined, 10);
    expect(start.rows).toEqual([]);
    // Only this destination's deliveries are due this early: the claim takes them, and the completion finishes two.
    const claim = { now: early, limit: 10, perDestinationLimit: 10, room: new Map(), leaseMs: 60_000, owner: "feed" };
    const claimed = (await driver.claimDeliveries(db.pool, claim)).deliveries.sort((x, y) => Number(x.id) - Number(y.id));
    expect(claimed.map((d) => d.id)).toEqual(ids);
    const finish = (d: (typeof claimed)[number]) => ({
      destinationId: d.destinationId,
      id: d.id,
      leaseToken: d.leaseToken,
      status: "delivered" as const,
      runAt: early,
      attempted: true,
      attemptedAt: early,
      retryUrls: null,
      attempts: [
        {
          urlIndex: 0,
          url: "https://example.com/hook",
          attemptedAt: early,
          outcome: "success" as const,
          statusCode: 200,
          error: null,
          latencyMs: 5,
          responseBody: null,
        },
      ],
    });
    await driver.completeDeliveries(db.pool, claimed.slice(0, 2).map(finish));
    const page = async (position: FeedPosition, limit: number) => {
      const read = await reads.readFinishFeed(db.pool, filter, position, limit);
      return { ids: read.rows.map((row) => row.id), next: read.next };
    };
    // Two finished in one transaction, read one at a time in (transaction, id) order.
    const one = await page(start.next, 1);
    expect(one.ids).toEqual([ids[0]]);
    const two = await page(one.next, 1);
    expect(two.ids).toEqual([ids[1]]);
    const none = await page(two.next, 1);
    expect(none.ids).toEqual([]);
    await driver.completeDeliveries(db.pool, [finish(claimed[2]!)]);
    const three = await page(none.next, 10);
    expect(three.ids).toEqual([ids[2]]);
    expect((await page(three.next, 10)).ids).toEqual([]);
    // Without a position: the latest finishes, newest first, with their messages.
    const latest = await reads.readFinishFeed(db.pool, filter, undefined, 10);
    expect(latest.rows.map((row) => [row.id, row.user_id, row.status])).toEqual([
      [ids[2], "c", "delivered"],
      [ids[1], "b", "delivered"],
      [ids[0], "a", "delivered"],
    ]);
    // A byte bound ends a page early, but never before its first row.
    expect((await reads.readFinishFeed(db.pool, filter, undefined, 10, 1)).rows.map((row) => row.id)).toEqual([ids[2]]);
    expect((await reads.readFinishFeed(db.pool, { ...filter, userId: "b" }, undefined, 10)).rows.map((row) => row.id)).toEqual([ids[1]]);
  });

  test("countReplayable: a bulk replay's matching deliveries, by user, less those past retention", async () => {
    const destination = await seedDestination(db.pool, sourceId, received);
    const old = await seedMessages(db.pool, sourceId, later(-86_400_000), ["who"]);
    const fresh = await seedMessages(db.pool, sourceId, received, ["who", "someone-else", "who"]);
    const ids = await seedDeliveries(db.pool, destination, [...old, ...fresh], received);
    await finishDeliveries(db.pool, destination, ids, "failed", received);
    const filter = { destinationId: destination, statuses: ["failed" as const], userId: "who" };
    const counts = await reads.countReplayable(db.pool, filter, later(-3_600_000));
    expect(counts).toMatchObject({ replayable: 2, pastRetention: 1 });
    expect(Number(counts.maxId)).toBeGreaterThanOrEqual(Number(ids[3]));
    expect(await reads.countReplayable(db.pool, { ...filter, statuses: ["expired"] }, later(-3_600_000))).toMatchObject({
      replayable: 0,
      pastRetention: 0,
    });
  });

  test("backfill candidates: the range's calls the destination has no delivery of, paged", async () => {
    const destination = await seedDestination(db.pool, sourceId, received);
    const at = later(86_400_000);
    const messages = await seedMessages(db.pool, sourceId, at, ["a", "b", "c", "d", "e"]);
    await seedDeliveries(db.pool, destination, messages.slice(0, 1), received);
    await finishDeliveries(
      db.pool,
      destination,
      await seedDeliveries(db.pool, destination, messages.slice(1, 3), received),
      "delivered",
      received,
    );
    const range = { destinationId: destination, since: at, until: later(86_400_001) };
    // Queued or finished, a call with a delivery is no candidate.
    expect(await reads.countBackfillCandidates(db.pool, range)).toBe(2);
    // Pages skip only finished ones (a page's insert skips queued ones); a short page ends the range.
    const first = await reads.selectBackfillCandidates(db.pool, range, "0", 2);
    expect(first.map((call) => call.id)).toEqual([messages[0], messages[3]]);
    expect(JSON.parse(first[1]!.payload!)).toMatchObject({ userId: "d" });
    const rest = await reads.selectBackfillCandidates(db.pool, range, first[1]!.id, 2, false);
    expect(rest).toEqual([{ id: messages[4], payload: null, received_at: at }]);
  });
});
