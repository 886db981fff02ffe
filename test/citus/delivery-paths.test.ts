import { randomBytes, randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { type ConsumeMessage, connect as connectAmqp } from "amqplib";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { DeliveryOrder } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationKind, Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { defaultRetrySchedule } from "../../src/config.js";
import { citusJobTable } from "../../src/db/job-table/index.js";
import { brokerAnswers, testAmqpUrl, testNatsUrl } from "../helpers/brokers.js";
import { citusSkipReason, citusUrl, createCitusTestDatabase, type CitusTestDatabase } from "../helpers/citus.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { eventually } from "../helpers/process.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// Every delivery path of a real Waypost whose job table Citus distributes
// over two workers: webhooks (retried, replayed, rate-limited, ordered per
// user), the Postgres warehouse, AMQP and NATS. The server is the same one
// the single-Postgres tests start; only its database differs.
describe.skipIf(!citusUrl)(`delivery on a Citus cluster${citusSkipReason}`, () => {
  let database: CitusTestDatabase;
  let server: TestServer;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    database = await createCitusTestDatabase();
    server = await startTestServer({
      database,
      config: {
        delivery: {
          pollIntervalMs: 100,
          retry: { ...defaultRetrySchedule, initialDelayMs: 200, maxDelayMs: 400, jitter: 0 },
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  /** Resolves with a destination's first `count` final completions (a retry's first result is not one). */
  function completionsOf(target: TestServer, destinationId: string, count: number) {
    const events = target.waypost.delivery!.events;
    return new Promise<Array<{ id: string; status: string }>>((resolve) => {
      const seen: Array<{ id: string; status: string }> = [];
      const off = events.on("completed", (completions) => {
        seen.push(...completions.filter((c) => c.destinationId === destinationId && !["pending", "retrying"].includes(c.status)));
        if (seen.length >= count) {
          off();
          resolve(seen);
        }
      });
    });
  }

  async function webhookDestination(respond: Responder, extra: Record<string, unknown> = {}) {
    const receiver = await startReceiver({ respond });
    receivers.push(receiver);
    const source = await server.createSource();
    const destination = await server.createDestination({
      name: `hook-${randomUUID().slice(0, 8)}`,
      sourceIds: [source.id],
      webhooks: [{ url: receiver.url }],
      ...extra,
    });
    return { receiver, source, destination, client: server.tracking(source.writeKey) };
  }

  test("the layout is distributed: the server runs the Citus driver", async () => {
    expect(server.waypost.jobTable).toBe(citusJobTable);
    const placed = await server.pool.query<{ nodes: string }>(
      "SELECT count(DISTINCT nodeport)::text AS nodes FROM citus_shards WHERE table_name = 'delivery_queue'::regclass",
    );
    expect(placed.rows[0]?.nodes).toBe("2");
  });

  test("webhooks: every call of a batch is delivered once, signed, and recorded in the history", async () => {
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const { receiver, client, destination } = await webhookDestination(() => ({ status: 200 }), { signingSecrets: [secret] });
    const done = completionsOf(server, destination.id, 50);
    await client.batch({
      batch: Array.from({ length: 50 }, (_, i) => ({
        type: { case: "track" as const, value: { userId: `u${i}`, event: "Paid", messageId: `pay-${i}` } },
      })),
    });
    expect((await done).every((c) => c.status === "delivered")).toBe(true);
    const requests = await receiver.waitForRequests(50);
    expect(new Set(requests.map((r) => JSON.parse(r.body).messageId)).size).toBe(50);
    // Each one verifies with the reference Standard Webhooks library.
    for (const request of requests) expect(verifyStandardWebhook(secret, request, new Date())).toMatchObject({ event: "Paid" });
    const history = await server.pool.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM delivery_history WHERE destination_id = $1 AND status = 'delivered'",
      [destination.id],
    );
    expect(history.rows[0]?.n).toBe("50");
    const listed = await server.deliveries.listDeliveries({ destinationId: destination.id, pageSize: 100 });
    expect(listed.deliveries).toHaveLength(50);
  });

  test("the finish feed: each finish once, in pages, bounded by the coordinator's settled snapshots", async () => {
    const { client, destination } = await webhookDestination(() => ({ status: 200 }));
    const feed = (pageToken: string, pageSize = 5) =>
      server.deliveries.listDeliveries({ destinationId: destination.id, order: DeliveryOrder.FINISH_TIME_DESC, pageToken, pageSize });
    const start = await feed("");
    expect(start.deliveries).toEqual([]);
    const done = completionsOf(server, destination.id, 12);
    await client.batch({
      batch: Array.from({ length: 12 }, (_, i) => ({
        type: { case: "track" as const, value: { userId: `f${i}`, event: "Fed", messageId: `fed-${i}` } },
      })),
    });
    await done;
    const seen: string[] = [];
    let token = start.nextPageToken;
    const sizes: number[] = [];
    for (let page = 0; page < 4; page++) {
      const next = await feed(token);
      sizes.push(next.deliveries.length);
      seen.push(...next.deliveries.map((d) => d.messageId));
      token = next.nextPageToken;
    }
    // Three pages of the burst (5, 5, 2), then nothing new: every finish once.
    expect(sizes).toEqual([5, 5, 2, 0]);
    expect(new Set(seen)).toEqual(new Set(Array.from({ length: 12 }, (_, i) => `fed-${i}`)));
    // A later finish is the next read's.
    const later = completionsOf(server, destination.id, 1);
    await client.track({ track: { userId: "f", event: "Fed", messageId: "fed-later" } });
    await later;
    expect((await feed(token)).deliveries.map((d) => d.messageId)).toEqual(["fed-later"]);
  });

  test("retries: a failed attempt is retried, and both attempts are recorded", async () => {
    const { receiver, client, destination } = await webhookDestination((_, index) => ({ status: index === 0 ? 503 : 200 }));
    const done = completionsOf(server, destination.id, 1);
    await client.track({ track: { userId: "u", event: "Retry me" } });
    expect((await done)[0]?.status).toBe("delivered");
    expect(receiver.requests).toHaveLength(2);
    const attempts = await server.pool.query<{ outcome: string; status_code: number }>(
      "SELECT outcome::text, status_code FROM delivery_attempts WHERE destination_id = $1 ORDER BY attempt",
      [destination.id],
    );
    expect(attempts.rows.map((r) => r.status_code)).toEqual([503, 200]);
  });

  test("replay: a failed call is sent again on RetryDelivery", async () => {
    // A 400 is final: the delivery fails at once, and only a replay sends it again.
    const { receiver, client, destination } = await webhookDestination((_, index) => ({ status: index === 0 ? 400 : 200 }));
    const first = completionsOf(server, destination.id, 1);
    await client.track({ track: { userId: "u", event: "Replay me" } });
    const [completion] = await first;
    expect(completion?.status).toBe("failed");
    const again = completionsOf(server, destination.id, 1);
    await server.deliveries.retryDelivery({ id: completion!.id });
    expect((await again)[0]?.status).toBe("delivered");
    const requests = await receiver.waitForRequests(2);
    expect(JSON.parse(requests[1]!.body).messageId).toBe(JSON.parse(requests[0]!.body).messageId);
  });

  test("per-user ordering: a user's later call waits for the earlier one's retry", async () => {
    let failedOnce = false;
    const { receiver, client, destination } = await webhookDestination(
      (request) => {
        const event = JSON.parse(request.body).event;
        if (event === "A1" && !failedOnce) {
          failedOnce = true;
          return { status: 503 };
        }
        return { status: 200 };
      },
      { ordering: Ordering.PER_USER },
    );
    const done = completionsOf(server, destination.id, 3);
    await client.batch({
      batch: [
        ["a", "A1"],
        ["a", "A2"],
        ["b", "B1"],
      ].map(([userId, event]) => ({ type: { case: "track" as const, value: { userId: userId!, event: event! } } })),
    });
    await done;
    const events = receiver.requests.map((r) => JSON.parse(r.body).event as string);
    expect(events.filter((e) => e.startsWith("A"))).toEqual(["A1", "A1", "A2"]);
  });

  test("rate limits: a destination limited to 5 requests/s is not sent more", async () => {
    const { receiver, client, destination } = await webhookDestination(() => ({ status: 200 }), { maxRequestsPerSecond: 5 });
    const arrivals: number[] = [];
    const original = receiver.respond;
    receiver.respond = (request, index) => {
      arrivals.push(performance.now());
      return original(request, index);
    };
    const done = completionsOf(server, destination.id, 15);
    await client.batch({
      batch: Array.from({ length: 15 }, (_, i) => ({ type: { case: "track" as const, value: { userId: `u${i}`, event: "Limited" } } })),
    });
    await done;
    // 15 requests at 5/s with a bucket of at most 5 take at least 2 s: a lower bound, safe on a busy machine.
    expect(arrivals[arrivals.length - 1]! - arrivals[0]!).toBeGreaterThan(1_500);
  });

  test("backfill: a new destination receives the source's stored calls", async () => {
    const { receiver, source, client } = await webhookDestination(() => ({ status: 200 }));
    await client.batch({
      batch: Array.from({ length: 10 }, (_, i) => ({
        type: { case: "track" as const, value: { userId: `u${i}`, event: "Old", messageId: `old-${i}` } },
      })),
    });
    await receiver.waitForRequests(10);
    const late = await startReceiver({ respond: () => ({ status: 200 }) });
    receivers.push(late);
    const destination = await server.createDestination({ name: "late", sourceIds: [source.id], webhooks: [{ url: late.url }] });
    await server.destinations.backfillDestination({
      destinationId: destination.id,
      since: timestampFromDate(new Date(Date.now() - 600_000)),
    });
    const requests = await late.waitForRequests(10);
    expect(new Set(requests.map((r) => JSON.parse(r.body).messageId))).toEqual(new Set(Array.from({ length: 10 }, (_, i) => `old-${i}`)));
  });

  test("maintenance: a pass (partitions, expiry, retention, purges, vacuum check) runs on the cluster", async () => {
    const pass = await server.waypost.maintenance!.runOnce();
    expect(pass).toMatchObject({ expired: 0, purged: 0, droppedDays: 0 });
    expect(typeof (await server.waypost.maintenance!.vacuumIfNeeded())).toBe("boolean");
    // The coming days' partitions exist on the shards too.
    const partitions = await server.pool.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM pg_dist_partition WHERE logicalrelid::text LIKE 'delivery_history_2%'",
    );
    expect(Number(partitions.rows[0]?.n)).toBeGreaterThanOrEqual(3);
  });

  describe("warehouse", () => {
    let warehouse: TestDatabase;
    beforeAll(async () => {
      warehouse = await createTestDatabase({ migrated: false });
    });
    afterAll(() => warehouse?.drop());

    test("calls are loaded into the warehouse's tables", async () => {
      const source = await server.createSource();
      const destination = await server.createDestination({
        name: "warehouse",
        sourceIds: [source.id],
        kind: DestinationKind.POSTGRES,
        postgres: { url: warehouse.url, schema: "analytics" },
      });
      const done = completionsOf(server, destination.id, 3);
      const client = server.tracking(source.writeKey);
      for (let i = 0; i < 3; i++) await client.track({ track: { userId: `w${i}`, event: "Loaded" } });
      expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered"]);
      const target = new pg.Client({ connectionString: warehouse.url });
      await target.connect();
      try {
        const rows = await target.query<{ n: string }>("SELECT count(*)::text AS n FROM analytics.tracks");
        expect(rows.rows[0]?.n).toBe("3");
      } finally {
        await target.end();
      }
    });
  });

  test("AMQP: calls are published to RabbitMQ with confirms", async () => {
    if (!(await brokerAnswers("amqp", testAmqpUrl))) return;
    const exchange = `waypost-citus-${randomUUID().slice(0, 8)}`;
    const connection = await connectAmqp(testAmqpUrl);
    const channel = await connection.createChannel();
    try {
      await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: true });
      const { queue } = await channel.assertQueue("", { exclusive: true });
      await channel.bindQueue(queue, exchange, "#");
      const received: ConsumeMessage[] = [];
      const three = new Promise<void>((resolve) => {
        void channel.consume(queue, (message) => {
          if (message) received.push(message);
          if (received.length === 3) resolve();
        });
      });
      const source = await server.createSource();
      const destination = await server.createDestination({
        name: "amqp",
        sourceIds: [source.id],
        kind: DestinationKind.AMQP,
        amqp: { url: testAmqpUrl, exchange, routingKey: "{type}" },
      });
      const done = completionsOf(server, destination.id, 3);
      const client = server.tracking(source.writeKey);
      for (let i = 0; i < 3; i++) await client.track({ track: { userId: `q${i}`, event: "Queued" } });
      await three;
      expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered"]);
      expect(received.map((m) => m.fields.routingKey)).toEqual(["track", "track", "track"]);
    } finally {
      await connection.close();
    }
  });

  test("NATS JetStream: calls are published to a stream", async () => {
    if (!(await brokerAnswers("nats", testNatsUrl))) return;
    const stream = `WAYPOST_CITUS_${randomUUID().slice(0, 8).toUpperCase()}`;
    const nc = await connectNats({ servers: new URL(testNatsUrl).host });
    const jsm = await jetstreamManager(nc);
    try {
      await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`] });
      const source = await server.createSource();
      const destination = await server.createDestination({
        name: "nats",
        sourceIds: [source.id],
        kind: DestinationKind.NATS,
        nats: { servers: [testNatsUrl], subject: `${stream.toLowerCase()}.{type}` },
      });
      const done = completionsOf(server, destination.id, 3);
      const client = server.tracking(source.writeKey);
      for (let i = 0; i < 3; i++) await client.track({ track: { userId: `n${i}`, event: "Streamed" } });
      expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered", "delivered"]);
      const info = await eventually(async () => {
        const i = await jsm.streams.info(stream);
        return i.state.messages === 3 && i;
      });
      expect(info.state.messages).toBe(3);
    } finally {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    }
  });
});
