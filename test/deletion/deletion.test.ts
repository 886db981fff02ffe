import { fromJson } from "@bufbuild/protobuf";
import { timestampDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Client } from "@connectrpc/connect";
import { afterAll, expect } from "vitest";
import { AudienceKind } from "../../gen/waypost/v1/audience_pb.js";
import { DeletionService, DeletionStatus } from "../../gen/waypost/v1/deletion_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { deleteMessages } from "../helpers/job-table-fixtures.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";
import { audienceClient, countRows, createAudience, hmacSha1Hex, storedMembers, withAdmin } from "../audiences/support.js";

const test = testWith();
let flaky: Receiver;
let deletion: Client<typeof DeletionService>;

test.beforeAll(async ({ server }) => {
  // Answers 503: its deliveries stay undelivered (retrying).
  flaky = await startReceiver({ respond: () => ({ status: 503, body: "down" }) });
  deletion = withAdmin(createClient(DeletionService, server.transport), server.adminToken);
});
afterAll(async () => {
  await flaky?.close();
});

const secret = "delete-secret";

async function userMessages(server: TestServer, sourceId: string, userId: string): Promise<string[]> {
  const result = await server.pool.query<{ type: string }>("SELECT type FROM messages WHERE source_id = $1 AND user_id = $2 ORDER BY id", [
    sourceId,
    userId,
  ]);
  return result.rows.map((r) => r.type);
}

test("a deletion request removes the user's data everywhere and notifies every enabled destination", async ({ server, receiver: ok }) => {
  const a = await server.createSource("a");
  const b = await server.createSource("b");
  const c = await server.createSource("c (no destinations)");
  // Audience state first (no destinations yet: these identify calls are only stored).
  const audience = await createAudience(server, a.id, "Buyers");
  await audienceClient(server).syncAudience({ audienceId: audience.id, userIds: ["doomed", "keep"] });
  const trait = await createAudience(server, b.id, "Score", AudienceKind.COMPUTED_TRAIT);
  await audienceClient(server).syncComputedTrait({
    audienceId: trait.id,
    values: { doomed: fromJson(ValueSchema, 5), keep: fromJson(ValueSchema, 1) },
  });

  const hook = await server.createDestination({ name: "hook", sourceIds: [a.id], webhooks: [{ url: ok.url }], sharedSecret: secret });
  const down = await server.createDestination({ name: "down", sourceIds: [a.id], webhooks: [{ url: flaky.url }] });
  const off = await server.createDestination({ name: "off", sourceIds: [a.id, b.id], webhooks: [{ url: ok.url }], enabled: false });
  const bHook = await server.createDestination({ name: "b-hook", sourceIds: [b.id], webhooks: [{ url: ok.url }] });

  // 4 calls in a (to hook and down), 1 in b, 1 in c.
  const attempted = server.waitForDeliveries(9, ["delivered", "retrying"]);
  const ta = server.tracking(a.writeKey);
  await ta.track({ track: { userId: "doomed", event: "Bought" } });
  await ta.identify({ identify: { userId: "doomed", traits: { email: "d@example.com" } } });
  await ta.track({ track: { userId: "keep", event: "Bought" } });
  await ta.alias({ alias: { userId: "doomed-2", previousId: "doomed" } });
  await server.tracking(b.writeKey).track({ track: { userId: "doomed", event: "Viewed" } });
  await server.tracking(c.writeKey).track({ track: { userId: "doomed", event: "Viewed" } });
  await attempted;
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1 AND status = 'retrying'", [down.id])).toBe(4);
  const okBefore = ok.requests.length;
  const flakyBefore = flaky.requests.length;

  // Two notifications delivered, and down's first attempt written as retrying.
  const notified = server.waitForDeliveries(3, ["delivered", "retrying"]);
  const { deletionRequest: created } = await deletion.createDeletionRequest({ userId: "doomed", sourceIds: [] });
  expect(created).toMatchObject({
    userId: "doomed",
    status: DeletionStatus.IN_PROGRESS,
    // a: track, identify, alias (previousId), audience identify; b: track, trait identify; c: track.
    messagesDeleted: 7n,
    // a: hook and down; b: b-hook; c has none; off is disabled.
    notificationsTotal: 3n,
  });
  expect([...created!.sourceIds].sort()).toEqual([a.id, b.id, c.id].sort());
  expect(created!.completeTime).toBeUndefined();

  // The notifications: exactly three keys, signed where a secret is set.
  const requests = (await ok.waitForRequests(okBefore + 2)).slice(okBefore);
  await flaky.waitForRequests(flakyBefore + 1);
  for (const request of requests) {
    const body = JSON.parse(request.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["type", "userId", "timestamp"]);
    expect(request.body).toBe(JSON.stringify({ type: "delete", userId: "doomed", timestamp: body.timestamp }));
    expect(body.timestamp).toBe(timestampDate(created!.createTime!).toISOString());
  }
  const signed = requests.filter((r) => r.headers["x-signature"] !== undefined);
  expect(signed).toHaveLength(1);
  expect(signed[0]!.headers["x-signature"]).toBe(hmacSha1Hex(secret, signed[0]!.body));
  expect(JSON.parse(flaky.requests[flakyBefore]!.body)).toMatchObject({ type: "delete", userId: "doomed" });

  // Stored data: only the delete notifications remain; other users untouched.
  expect(await userMessages(server, a.id, "doomed")).toEqual(["delete"]);
  expect(await userMessages(server, b.id, "doomed")).toEqual(["delete"]);
  expect(await userMessages(server, c.id, "doomed")).toEqual([]);
  expect(await userMessages(server, a.id, "doomed-2")).toEqual([]);
  expect(await userMessages(server, a.id, "keep")).toEqual(["identify", "track"]);
  expect(await userMessages(server, b.id, "keep")).toEqual(["identify"]);
  expect(await storedMembers(server, audience.id)).toEqual({ keep: true });
  expect(await storedMembers(server, trait.id)).toEqual({ keep: 1 });
  const listed = await audienceClient(server).listAudiences({ sourceId: a.id });
  expect(listed.audiences[0]!.memberCount).toBe(1n);
  // Undelivered deliveries went with the messages: down keeps keep's retry and the notification.
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [down.id])).toBe(2);
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [off.id])).toBe(0);
  // hook: keep's track and the notification; b-hook: the notification.
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [hook.id])).toBe(2);
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [bHook.id])).toBe(1);
  expect(
    await countRows(
      server,
      "SELECT 1 FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN messages m ON m.id = d.message_pk WHERE m.user_id = 'doomed' AND m.type <> 'delete'",
    ),
  ).toBe(0);

  // Progress: two delivered, one still retrying.
  await notified;
  const progress = (await deletion.getDeletionRequest({ id: created!.id })).deletionRequest!;
  expect(progress).toMatchObject({ status: DeletionStatus.IN_PROGRESS, notificationsDelivered: 2n, notificationsFailed: 0n });

  // Deleting the failing destination cancels its retry: every notification is final.
  await server.destinations.deleteDestination({ id: down.id });
  const done = (await deletion.getDeletionRequest({ id: created!.id })).deletionRequest!;
  expect(done).toMatchObject({
    status: DeletionStatus.COMPLETED,
    notificationsTotal: 3n,
    notificationsDelivered: 2n,
    notificationsFailed: 1n,
    messagesDeleted: 7n,
  });
  expect(timestampDate(done.completeTime!).getTime()).toBeGreaterThanOrEqual(timestampDate(created!.createTime!).getTime());

  // The figures survive the retention purge of the notifications.
  expect(await deleteMessages(server.pool, "type = 'delete' AND user_id = 'doomed'")).toBeGreaterThan(0);
  const purged = (await deletion.getDeletionRequest({ id: created!.id })).deletionRequest!;
  expect(purged).toMatchObject({ status: DeletionStatus.COMPLETED, notificationsDelivered: 2n, notificationsFailed: 1n });
  expect(purged.completeTime).toEqual(done.completeTime);

  // A later sync without the user sends nothing for them: Waypost forgot them.
  const resync = await audienceClient(server).syncAudience({ audienceId: audience.id, userIds: ["keep"] });
  expect(resync.counts).toMatchObject({ added: 0n, removed: 0n, calls: 0n });
});

test("named sources only; input errors name the field", async ({ server }) => {
  const a = await server.createSource();
  const b = await server.createSource();
  await server.tracking(a.writeKey).track({ track: { userId: "u", event: "e" } });
  await server.tracking(b.writeKey).track({ track: { userId: "u", event: "e" } });

  const { deletionRequest } = await deletion.createDeletionRequest({ userId: "u", sourceIds: [b.id, b.id.toUpperCase()] });
  // No destination anywhere: nothing to notify, complete at once.
  expect(deletionRequest).toMatchObject({
    sourceIds: [b.id],
    messagesDeleted: 1n,
    notificationsTotal: 0n,
    status: DeletionStatus.COMPLETED,
  });
  expect(deletionRequest!.completeTime).toEqual(deletionRequest!.createTime);
  expect(await userMessages(server, a.id, "u")).toEqual(["track"]);
  expect(await userMessages(server, b.id, "u")).toEqual([]);

  const unknown = "00000000-0000-4000-8000-000000000000";
  await expect(deletion.createDeletionRequest({ userId: "u", sourceIds: [a.id, unknown] })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringMatching(/^sourceIds\[1\]: unknown source/),
  });
  await expect(deletion.createDeletionRequest({ userId: "u", sourceIds: ["web"] })).rejects.toMatchObject({
    rawMessage: expect.stringMatching(/^sourceIds\[0\]: /),
  });
  await expect(deletion.createDeletionRequest({ userId: "", sourceIds: [] })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringMatching(/^userId: /),
  });
  // The failed requests changed nothing.
  expect(await userMessages(server, a.id, "u")).toEqual(["track"]);
  await expect(deletion.getDeletionRequest({ id: unknown })).rejects.toMatchObject({ code: Code.NotFound });
});

test("a failure inside the request leaves everything as it was", async ({ server, receiver: ok }) => {
  const a = await server.createSource();
  await server.createDestination({ name: "paused", sourceIds: [a.id], webhooks: [{ url: ok.url }], enabled: false });
  await server.tracking(a.writeKey).track({ track: { userId: "v", event: "e" } });
  const audience = await createAudience(server, a.id, "Members");
  await audienceClient(server).syncAudience({ audienceId: audience.id, userIds: ["v"] });
  await server.pool.query(`
    CREATE FUNCTION fail_request() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'forced failure'; END $$;
    CREATE TRIGGER fail_request BEFORE INSERT ON deletion_requests FOR EACH ROW EXECUTE FUNCTION fail_request();`);
  try {
    await expect(deletion.createDeletionRequest({ userId: "v", sourceIds: [a.id] })).rejects.toMatchObject({
      code: Code.Internal,
    });
  } finally {
    await server.pool.query("DROP TRIGGER fail_request ON deletion_requests; DROP FUNCTION fail_request()");
  }
  expect(await userMessages(server, a.id, "v")).toEqual(["track", "identify"]);
  expect(await storedMembers(server, audience.id)).toEqual({ v: true });
});

test("ListDeletionRequests pages newest first, filters by user, and reports progress like Get", async ({ server }) => {
  const source = await server.createSource("listing");
  const created: string[] = [];
  for (const userId of ["list-1", "list-2", "list-3"]) {
    const { deletionRequest } = await deletion.createDeletionRequest({ userId, sourceIds: [source.id] });
    created.push(deletionRequest!.id);
  }
  const first = await deletion.listDeletionRequests({ pageSize: 2 });
  expect(first.deletionRequests.map((r) => r.id)).toEqual([created[2], created[1]]);
  expect(first.nextPageToken).not.toBe("");
  const second = await deletion.listDeletionRequests({ pageSize: 2, pageToken: first.nextPageToken });
  expect(second.deletionRequests[0]!.id).toBe(created[0]);
  const got = await deletion.getDeletionRequest({ id: created[0]! });
  expect(second.deletionRequests[0]).toEqual(got.deletionRequest);

  const mine = await deletion.listDeletionRequests({ userId: "list-2" });
  expect(mine.deletionRequests.map((r) => r.id)).toEqual([created[1]]);
  expect(mine.deletionRequests[0]!.status).toBe(DeletionStatus.COMPLETED);
  expect(mine.nextPageToken).toBe("");

  await expect(deletion.listDeletionRequests({ pageToken: "bogus" })).rejects.toMatchObject({ code: Code.InvalidArgument });
});
