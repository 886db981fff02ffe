import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { AudienceKind } from "../../gen/waypost/v1/audience_pb.js";
import { type TestReceivers, testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import {
  audienceClient,
  clearMessages,
  countRows,
  createAudience,
  hmacSha1Hex,
  identifyCalls,
  storedMembers,
  streamOf,
} from "./support.js";

const test = testWith();

const secret = "s3cret";

/** A source with an enabled destination (a real receiver), a disabled one, and another source. */
async function setup(server: TestServer, receivers: TestReceivers) {
  const receiver = await receivers.start();
  const source = await server.createSource("app");
  const other = await server.createSource("other app");
  const enabled = await server.createDestination({
    name: "hook",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    sharedSecret: secret,
  });
  const disabled = await server.createDestination({
    name: "off",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
  });
  await server.createDestination({ name: "other", sourceIds: [other.id], webhooks: [{ url: receiver.url }] });
  const audience = await createAudience(server, source.id, "High Value Users");
  return { receiver, source, other, enabled, disabled, audience };
}

async function deliveriesTo(server: TestServer, destinationId: string): Promise<number> {
  return countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [destinationId]);
}

test("CreateAudience derives the key, defaults the kind, and rejects bad input naming the field", async ({ server }) => {
  const client = audienceClient(server);
  const source = await server.createSource();
  const audience = await createAudience(server, source.id, "VIP-Customers 2024", AudienceKind.UNSPECIFIED);
  expect(audience).toMatchObject({ key: "vip_customers_2024", kind: AudienceKind.AUDIENCE, memberCount: 0n });
  expect(audience.lastSyncTime).toBeUndefined();

  const unknown = "00000000-0000-4000-8000-000000000000";
  await expect(client.createAudience({ audience: { sourceId: unknown, name: "x" } })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("audience.sourceId"),
  });
  await expect(client.createAudience({ audience: { sourceId: source.id, name: " " } })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("audience.name"),
  });
  await expect(client.createAudience({ audience: { sourceId: source.id, name: "!!!" } })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("audience.name"),
  });
  // Same key, other kind: both would write the same trait.
  await expect(
    client.createAudience({ audience: { sourceId: source.id, name: "vip customers 2024", kind: AudienceKind.COMPUTED_TRAIT } }),
  ).rejects.toMatchObject({ code: Code.AlreadyExists });
  // The same key on another source is fine.
  const other = await server.createSource();
  expect((await createAudience(server, other.id, "VIP Customers 2024")).key).toBe("vip_customers_2024");
});

test("ListAudiences pages, filters by source; DeleteAudience removes", async ({ server }) => {
  const client = audienceClient(server);
  const source = await server.createSource();
  const names = ["A one", "A two", "A three"];
  for (const name of names) await createAudience(server, source.id, name);
  const first = await client.listAudiences({ sourceId: source.id, pageSize: 2 });
  expect(first.audiences.map((a) => a.name)).toEqual(["A one", "A two"]);
  const second = await client.listAudiences({ sourceId: source.id, pageSize: 2, pageToken: first.nextPageToken });
  expect(second.audiences.map((a) => a.name)).toEqual(["A three"]);
  expect(second.nextPageToken).toBe("");

  await client.deleteAudience({ id: first.audiences[0]!.id });
  expect((await client.listAudiences({ sourceId: source.id })).audiences).toHaveLength(2);
  await expect(client.deleteAudience({ id: first.audiences[0]!.id })).rejects.toMatchObject({ code: Code.NotFound });
});

test("the first sync sends true for every member, only to the source's enabled destinations, signed", async ({ server, receivers }) => {
  const { receiver, source, other, enabled, disabled, audience } = await setup(server, receivers);
  const { counts } = await audienceClient(server).syncAudience({ audienceId: audience.id, userIds: ["u1", "u2", "u3"] });
  expect(counts).toMatchObject({ added: 3n, removed: 0n, changed: 0n, unchanged: 0n, calls: 3n });

  const requests = await receiver.waitForRequests(3);
  const bodies = requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
  expect(bodies.map((b) => b.userId).sort()).toEqual(["u1", "u2", "u3"]);
  for (const [index, body] of bodies.entries()) {
    expect(Object.keys(body)).toEqual(["version", "type", "userId", "traits", "context", "timestamp", "messageId"]);
    expect(body).toMatchObject({ version: 1, type: "identify", traits: { high_value_users: true }, context: {} });
    expect(requests[index]!.headers["x-signature"]).toBe(hmacSha1Hex(secret, requests[index]!.body));
  }
  expect(await deliveriesTo(server, enabled.id)).toBe(3);
  expect(await deliveriesTo(server, disabled.id)).toBe(0);
  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [other.id])).toBe(0);
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE source_id = $1", [other.id])).toBe(0);

  const listed = (await audienceClient(server).listAudiences({ sourceId: source.id })).audiences[0]!;
  expect(listed.memberCount).toBe(3n);
  expect(Math.abs(timestampDate(listed.lastSyncTime!).getTime() - Date.now())).toBeLessThan(60_000);
});

test("a later sync sends only changes: true for added, false for removed, nothing for unchanged", async ({ server, receivers }) => {
  const { source, audience } = await setup(server, receivers);
  const client = audienceClient(server);
  await client.syncAudience({ audienceId: audience.id, userIds: ["u1", "u2", "u3"] });
  await clearMessages(server, source.id);

  const { counts } = await client.syncAudience({ audienceId: audience.id, userIds: ["u2", "u3", "u4", "u5"] });
  expect(counts).toMatchObject({ added: 2n, removed: 1n, changed: 0n, unchanged: 2n, calls: 3n });
  expect(Object.fromEntries(await identifyCalls(server, source.id))).toEqual({
    u1: { high_value_users: false },
    u4: { high_value_users: true },
    u5: { high_value_users: true },
  });
  expect(await storedMembers(server, audience.id)).toEqual({ u2: true, u3: true, u4: true, u5: true });
});

test("repeating an identical sync sends nothing; duplicates count once; an empty sync removes all", async ({ server, receivers }) => {
  const { source, audience } = await setup(server, receivers);
  const client = audienceClient(server);
  const first = await client.syncAudience({ audienceId: audience.id, userIds: ["u1", "u2", "u1", "u2", "u1"] });
  expect(first.counts).toMatchObject({ added: 2n, calls: 2n });
  expect((await identifyCalls(server, source.id)).size).toBe(2);
  await clearMessages(server, source.id);

  const again = await client.syncAudience({ audienceId: audience.id, userIds: ["u2", "u1"] });
  expect(again.counts).toMatchObject({ added: 0n, removed: 0n, unchanged: 2n, calls: 0n });
  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [source.id])).toBe(0);

  const empty = await client.syncAudience({ audienceId: audience.id, userIds: [] });
  expect(empty.counts).toMatchObject({ removed: 2n, calls: 2n });
  expect(await storedMembers(server, audience.id)).toEqual({});
});

test("the streaming sync applies like the unary one, across chunks, duplicates included", async ({ server, receivers }) => {
  const { source, audience } = await setup(server, receivers);
  const client = audienceClient(server);
  const { counts } = await client.streamSyncAudience(
    streamOf([
      { audienceId: audience.id, userIds: ["a", "b"] },
      { userIds: ["b", "c"] },
      { audienceId: audience.id, userIds: [] },
      { userIds: ["d"] },
    ]),
  );
  expect(counts).toMatchObject({ added: 4n, calls: 4n });
  expect([...(await identifyCalls(server, source.id)).keys()].sort()).toEqual(["a", "b", "c", "d"]);

  const otherAudience = await createAudience(server, source.id, "Other");
  await expect(
    client.streamSyncAudience(
      streamOf([
        { audienceId: audience.id, userIds: ["e"] },
        { audienceId: otherAudience.id, userIds: [] },
      ]),
    ),
  ).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("audienceId") });
  await expect(client.streamSyncAudience(streamOf([{ userIds: ["a"] }]))).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("audienceId"),
  });
});

test("an invalid user id fails the sync naming its index, and nothing is applied", async ({ server, receivers }) => {
  const { source, audience } = await setup(server, receivers);
  const client = audienceClient(server);
  await client.syncAudience({ audienceId: audience.id, userIds: ["u1", "u2"] });
  await clearMessages(server, source.id);

  const unary = client.syncAudience({ audienceId: audience.id, userIds: ["u3", "u4", "u5", ""] });
  await expect(unary).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringMatching(/^userIds\[3\]: /) });

  // Mid-stream: the first chunk is staged before the bad one arrives.
  const streamed = client.streamSyncAudience(
    streamOf([{ audienceId: audience.id, userIds: ["u3", "u4"] }, { userIds: ["u5", "x".repeat(1025)] }]),
  );
  const error = await streamed.catch((e: unknown) => ConnectError.from(e));
  expect(error).toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringMatching(/^userIds\[1\]: .*stream message 2/) });
  await expect(client.syncAudience({ audienceId: audience.id, userIds: ["a\0b"] })).rejects.toMatchObject({
    rawMessage: expect.stringContaining("userIds[0]"),
  });

  expect(await storedMembers(server, audience.id)).toEqual({ u1: true, u2: true });
  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [source.id])).toBe(0);
});

test("a database failure part-way through the apply leaves no message and the membership unchanged", async ({ server, receivers }) => {
  const { source, audience, enabled } = await setup(server, receivers);
  const client = audienceClient(server);
  await client.syncAudience({ audienceId: audience.id, userIds: ["u1", "u2"] });
  await clearMessages(server, source.id);
  // Fails the one statement of the apply at the row of user "boom", after
  // rows for other users may already have been written.
  await server.pool.query(`
    CREATE FUNCTION fail_for_boom() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.user_id = 'boom' THEN RAISE EXCEPTION 'forced failure'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER fail_for_boom BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION fail_for_boom();`);
  try {
    // The trigger is live (the RPC's error is masked as internal).
    await expect(
      server.pool.query(
        "INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload) VALUES ($1, 'm', 'track', 'boom', now(), '{}')",
        [source.id],
      ),
    ).rejects.toThrow("forced failure");
    await expect(client.syncAudience({ audienceId: audience.id, userIds: ["u2", "u3", "boom", "u4"] })).rejects.toMatchObject({
      code: Code.Internal,
    });
  } finally {
    await server.pool.query("DROP TRIGGER fail_for_boom ON messages; DROP FUNCTION fail_for_boom()");
  }
  expect(await storedMembers(server, audience.id)).toEqual({ u1: true, u2: true });
  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [source.id])).toBe(0);
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1 AND status = 'pending'", [enabled.id])).toBe(0);
  const listed = (await client.listAudiences({ sourceId: source.id })).audiences[0]!;
  expect(listed.memberCount).toBe(2n);

  // The same sync succeeds once the failure is gone: the connection was not left broken.
  const { counts } = await client.syncAudience({ audienceId: audience.id, userIds: ["u2", "u3", "boom", "u4"] });
  expect(counts).toMatchObject({ added: 3n, removed: 1n });
});

test("SyncAudience refuses a computed trait, and unknown audiences are not found", async ({ server }) => {
  const source = await server.createSource();
  const trait = await createAudience(server, source.id, "Lifetime Value", AudienceKind.COMPUTED_TRAIT);
  const client = audienceClient(server);
  await expect(client.syncAudience({ audienceId: trait.id, userIds: ["u1"] })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("SyncComputedTrait"),
  });
  await expect(client.syncAudience({ audienceId: "00000000-0000-4000-8000-000000000000", userIds: [] })).rejects.toMatchObject({
    code: Code.NotFound,
  });
  await expect(client.syncAudience({ audienceId: "nope", userIds: [] })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("audienceId"),
  });
});
