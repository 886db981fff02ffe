import { create } from "@bufbuild/protobuf";
import { Code, type HandlerContext } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  DeliveryStatus,
  DeliveryView,
  Fate,
  GetDeliveryRequestSchema,
  type GetDeliveryResponse,
  ListDeliveriesRequestSchema,
  type ListDeliveriesResponse,
  ListFatesRequestSchema,
  type ListFatesResponse,
  RetryDeliveriesRequestSchema,
  type RetryDeliveriesResponse,
} from "../../../../gen/waypost/v1/delivery_pb.js";
import { createDeliveryService } from "../../../../src/api/delivery-service.js";
import { createBacklogReader } from "../../../../src/backlog-reader.js";
import { systemClock } from "../../../../src/clock.js";
import { storeMessagesOnCitus } from "../../../../src/db/job-table/citus/store-messages.js";
import { citusJobTable } from "../../../../src/db/job-table/index.js";
import { selectStoredCallBodiesById, selectStoredCallIds } from "../../../../src/db/queries/stored-calls.js";
import { createLogger } from "../../../../src/logger.js";
import { citusSkipReason, citusUrl, createCitusTestDatabase } from "../../../helpers/citus.js";
import { startTestServer, type TestServer } from "../../../helpers/server.js";

const citus = citusJobTable;
const context = {} as HandlerContext;

// The admin reads on a real server on the cluster, through a delivery
// service built here with the Citus driver on the server's pool (the
// server's own picks the same driver at start).
describe.skipIf(!citusUrl)(`admin reads on Citus${citusSkipReason}`, () => {
  let server: TestServer;
  let service: ReturnType<typeof createDeliveryService>;
  let sourceId: string;
  let live: string;
  let other: string;
  let off: string;
  const messageIds = ["call-1", "call-2", "call-3"];
  let finishedId: string;

  beforeAll(async () => {
    server = await startTestServer({ database: await createCitusTestDatabase(), config: { role: "api" } });
    service = createDeliveryService({ pool: server.pool, clock: systemClock, retentionMs: 86_400_000, jobTable: citus });
    sourceId = (await server.createSource()).id;
    const destination = async (name: string) =>
      (await server.createDestination({ name, sourceIds: [sourceId], webhooks: [{ url: "https://hooks.example.com/" }] })).id;
    live = await destination("live");
    other = await destination("other");
    off = await destination("off");
    await server.pool.query("UPDATE destinations SET enabled = false WHERE id = $1", [off]);
    const received = new Date();
    for (const [i, messageId] of messageIds.entries()) {
      // One batch per call: distinct creation times, so the newest-first order is the calls' order reversed.
      await storeMessagesOnCitus(server.pool, sourceId, new Date(received.getTime() + i), [
        { messageId, type: "track", userId: `user-${i}`, payload: JSON.stringify({ event: `e${i}` }), integrations: undefined },
      ]);
    }
    // One delivery finished as the completion writer would leave it: history and an attempt that sent a changed body.
    const queued = await server.pool.query<{ id: string; message_pk: string }>(
      "SELECT id::text, message_pk::text FROM delivery_queue WHERE destination_id = $1 ORDER BY id LIMIT 1",
      [live],
    );
    finishedId = queued.rows[0]!.id;
    await server.pool.query(
      `WITH moved AS (DELETE FROM delivery_queue WHERE destination_id = $1 AND id = $2 RETURNING *)
       INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
       SELECT destination_id, id, message_pk, source_id, 'delivered', created_at, now(), 1, 1 FROM moved`,
      [live, finishedId],
    );
    await server.pool.query(
      `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms, sent_body)
       VALUES ($1, $2, 1, 0, 'https://hooks.example.com/', now(), 'success', 200, 7, '{"changed":true}')`,
      [live, finishedId],
    );
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  const list = async (fields: Parameters<typeof create<typeof ListDeliveriesRequestSchema>>[1]) =>
    (await service.listDeliveries!(create(ListDeliveriesRequestSchema, fields), context)) as ListDeliveriesResponse;

  test("ListDeliveries without a destination: every live destination's deliveries, newest first, paged", async () => {
    const firstPage = await list({ pageSize: 4 });
    expect(firstPage.deliveries).toHaveLength(4);
    expect(firstPage.nextPageToken).not.toBe("");
    const secondPage = await list({ pageSize: 4, pageToken: firstPage.nextPageToken });
    expect(secondPage.nextPageToken).toBe("");
    const all = [...firstPage.deliveries, ...secondPage.deliveries];
    expect(all).toHaveLength(6);
    expect(new Set(all.map((d) => d.id)).size).toBe(6);
    expect(all.map((d) => d.messageId)).toEqual(["call-3", "call-3", "call-2", "call-2", "call-1", "call-1"]);
    expect(new Set(all.map((d) => d.destinationId))).toEqual(new Set([live, other]));
    expect(all.find((d) => d.messageId === "call-2")!.body).toBe('{"event":"e1"}');
  });

  test("ListDeliveries of one destination, of a messageId and of a userId", async () => {
    const ofLive = await list({ destinationId: live });
    expect(ofLive.deliveries.map((d) => [d.messageId, d.destinationId])).toEqual([
      ["call-3", live],
      ["call-2", live],
      ["call-1", live],
    ]);
    const byMessage = await list({ messageId: "call-2" });
    expect(byMessage.deliveries.map((d) => d.destinationId).sort()).toEqual([live, other].sort());
    const byUser = await list({ userId: "user-0", destinationId: live, statuses: [DeliveryStatus.DELIVERED] });
    expect(byUser.deliveries.map((d) => [d.id, d.messageId, d.status])).toEqual([[finishedId, "call-1", DeliveryStatus.DELIVERED]]);
  });

  test("ListDeliveries' basic view: each delivery's last attempt, read with the page", async () => {
    const basic = await list({ destinationId: live, view: DeliveryView.BASIC, statuses: [DeliveryStatus.DELIVERED] });
    expect(basic.deliveries.map((d) => [d.id, d.attempts.length, d.body])).toEqual([[finishedId, 0, ""]]);
    const [retrying] = (await list({ destinationId: other })).deliveries;
    await server.pool.query(
      `INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, error, latency_ms)
       VALUES ($1, $2, 1, 0, 'https://hooks.example.com/', now(), 'retryable', 503, 'service unavailable', 9)`,
      [other, retrying!.id],
    );
    const page = await list({ destinationId: other, view: DeliveryView.BASIC });
    expect(page.deliveries.map((d) => d.lastError)).toEqual(["service unavailable", "", ""]);
  });

  test("GetDelivery: the finished delivery with its message, its attempt and the body it sent", async () => {
    const { delivery } = (await service.getDelivery!(create(GetDeliveryRequestSchema, { id: finishedId }), context)) as GetDeliveryResponse;
    expect(delivery).toMatchObject({
      id: finishedId,
      messageId: "call-1",
      userId: "user-0",
      status: DeliveryStatus.DELIVERED,
      body: '{"changed":true}',
    });
    expect(delivery!.attempts.map((a) => [a.attempt, a.statusCode, a.latencyMs])).toEqual([[1, 200, 7]]);
    await expect(service.getDelivery!(create(GetDeliveryRequestSchema, { id: "999999" }), context)).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  test("ListFates: the disabled destination's calls, with their messages", async () => {
    const fates = (await service.listFates!(
      create(ListFatesRequestSchema, { destinationId: off, fate: Fate.DISABLED }),
      context,
    )) as ListFatesResponse;
    expect(fates.calls.map((c) => [c.messageId, c.event, c.userId, c.fate])).toEqual([
      ["call-3", "e2", "user-2", Fate.DISABLED],
      ["call-2", "e1", "user-1", Fate.DISABLED],
      ["call-1", "e0", "user-0", Fate.DISABLED],
    ]);
  });

  test("GetDestinationStats and ExplainMessage answer on the cluster through the server", async () => {
    const stats = await server.deliveries.getDestinationStats({ destinationId: live });
    expect([stats.pending, stats.delivered, stats.attemptsLastHour]).toEqual([2n, 1n, 1n]);
    const { destination } = await server.destinations.getDestination({ id: live });
    expect(destination!.name).toBe("live");
    const explained = await server.deliveries.explainMessage({ messageId: "call-1", sourceId });
    const byName = new Map(explained.destinations.map((d) => [d.destinationName, d]));
    expect(byName.get("live")).toMatchObject({ fate: Fate.DELIVERED, deliveryId: finishedId });
    expect(byName.get("other")!.fate).toBe(Fate.PENDING);
    expect(byName.get("off")!.fate).toBe(Fate.DISABLED);
  });

  test("the backlog gauge, expiry reports and stored calls", async () => {
    const reader = createBacklogReader({ pool: server.pool, clock: systemClock, logger: createLogger("silent"), jobTable: citus });
    expect(Object.fromEntries((await reader.read())!)).toEqual({ [live]: 2, [other]: 3, [off]: 0 });

    await server.pool.query(
      `INSERT INTO destination_health (destination_id, expired_unreported, updated_at) VALUES ($1, 4, now())
       ON CONFLICT (destination_id) DO UPDATE SET expired_unreported = 4, expired_reported_at = NULL`,
      [other],
    );
    const now = new Date();
    const reports = await citus.reads.takeExpiredReports(server.pool, now, 60_000);
    expect(reports).toEqual([{ destinationId: other, name: "other", count: 4, since: null }]);
    // Taken: not reported twice, and not due again within the interval.
    expect(await citus.reads.takeExpiredReports(server.pool, now, 60_000)).toEqual([]);
    const health = await server.pool.query("SELECT expired_unreported FROM destination_health WHERE destination_id = $1", [other]);
    expect(health.rows).toEqual([{ expired_unreported: 0 }]);

    const ids = await selectStoredCallIds(server.pool, { sourceId, since: new Date(0), limit: 10 });
    expect(ids).toHaveLength(3);
    expect((await selectStoredCallBodiesById(server.pool, ids)).sort()).toEqual(['{"event":"e0"}', '{"event":"e1"}', '{"event":"e2"}']);
  });

  test("RetryDeliveries counts what it will replay: the failed deliveries of a destination, of a user", async () => {
    const oldest = await server.pool.query<{ id: string }>(
      "SELECT id::text FROM delivery_queue WHERE destination_id = $1 ORDER BY id LIMIT 1",
      [other],
    );
    await server.pool.query(
      `WITH moved AS (DELETE FROM delivery_queue WHERE destination_id = $1 AND id = $2 RETURNING *)
       INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
       SELECT destination_id, id, message_pk, source_id, 'failed', created_at, now(), 1, 1 FROM moved`,
      [other, oldest.rows[0]!.id],
    );
    const retry = async (fields: Parameters<typeof create<typeof RetryDeliveriesRequestSchema>>[1]) =>
      ((await service.retryDeliveries!(create(RetryDeliveriesRequestSchema, fields), context)) as RetryDeliveriesResponse).job!;
    expect(await retry({ destinationId: other, statuses: [DeliveryStatus.FAILED] })).toMatchObject({ matched: 1n, notReplayable: 0n });
    expect(await retry({ destinationId: other, statuses: [DeliveryStatus.FAILED], userId: "user-0" })).toMatchObject({ matched: 1n });
    expect(await retry({ destinationId: other, statuses: [DeliveryStatus.FAILED], userId: "user-1" })).toMatchObject({ matched: 0n });
    expect(await retry({ destinationId: live, statuses: [DeliveryStatus.FAILED] })).toMatchObject({ matched: 0n });
  });
});
