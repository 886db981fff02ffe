import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { expect } from "vitest";
import { AudienceKind } from "../../gen/waypost/v1/audience_pb.js";
import { emptyCall } from "../../src/calls/call.js";
import { buildCallPayload } from "../../src/ingest/payload.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { audienceClient, clearMessages, countRows, createAudience, identifyCalls, storedMembers, streamOf } from "./support.js";

const test = testWith();

function values(json: Record<string, JsonValue>): Record<string, Value> {
  return Object.fromEntries(Object.entries(json).map(([user, value]) => [user, fromJson(ValueSchema, value)]));
}

async function setup(server: TestServer) {
  const source = await server.createSource();
  const trait = await createAudience(server, source.id, "Lifetime Value", AudienceKind.COMPUTED_TRAIT);
  expect(trait).toMatchObject({ key: "lifetime_value", kind: AudienceKind.COMPUTED_TRAIT });
  return { source, trait, client: audienceClient(server) };
}

test("values are sent when new or changed (numbers, strings, objects, null); removed users get null", async ({ server }) => {
  const { source, trait, client } = await setup(server);
  const first = await client.syncComputedTrait({
    audienceId: trait.id,
    values: values({ u1: 42, u2: "gold", u3: { tier: "a", n: [1, 2] }, u4: null, u7: 7, u8: true }),
  });
  expect(first.counts).toMatchObject({ added: 6n, removed: 0n, changed: 0n, calls: 6n });
  expect(Object.fromEntries(await identifyCalls(server, source.id))).toEqual({
    u1: { lifetime_value: 42 },
    u2: { lifetime_value: "gold" },
    u3: { lifetime_value: { tier: "a", n: [1, 2] } },
    u4: { lifetime_value: null },
    u7: { lifetime_value: 7 },
    u8: { lifetime_value: true },
  });
  await clearMessages(server, source.id);

  const second = await client.syncComputedTrait({
    audienceId: trait.id,
    values: values({
      u1: 42, // same
      u2: "silver", // string changed
      u3: { n: [1, 2], tier: "a" }, // same object, other key order: unchanged (jsonb comparison)
      u4: null, // still null
      u5: 1.5, // new
      u8: "true", // boolean → string is a change
      u9: { nested: { deep: [null, false] } },
      // u7 is gone
    }),
  });
  expect(second.counts).toMatchObject({ added: 2n, removed: 1n, changed: 2n, unchanged: 3n, calls: 5n });
  expect(Object.fromEntries(await identifyCalls(server, source.id))).toEqual({
    u2: { lifetime_value: "silver" },
    u5: { lifetime_value: 1.5 },
    u7: { lifetime_value: null },
    u8: { lifetime_value: "true" },
    u9: { lifetime_value: { nested: { deep: [null, false] } } },
  });
  expect(await storedMembers(server, trait.id)).toEqual({
    u1: 42,
    u2: "silver",
    u3: { n: [1, 2], tier: "a" },
    u4: null,
    u5: 1.5,
    u8: "true",
    u9: { nested: { deep: [null, false] } },
  });
  await clearMessages(server, source.id);

  // Numbers change too, and an object's change is sent whole.
  const third = await client.syncComputedTrait({
    audienceId: trait.id,
    values: values({ u1: 43, u2: "silver", u3: { n: [1, 2, 3], tier: "a" }, u4: 0, u5: 1.5, u8: "true", u9: {} }),
  });
  expect(third.counts).toMatchObject({ changed: 4n, unchanged: 3n, calls: 4n });
  expect(Object.fromEntries(await identifyCalls(server, source.id))).toEqual({
    u1: { lifetime_value: 43 },
    u3: { lifetime_value: { n: [1, 2, 3], tier: "a" } },
    u4: { lifetime_value: 0 },
    u9: { lifetime_value: {} },
  });
});

test("a stored call is byte for byte what buildCallPayload writes for the same call", async ({ server }) => {
  const { source, trait, client } = await setup(server);
  const sent: Record<string, JsonValue> = {
    'we"ird\\id\n': { z: 1, a: "é 😀", m: [true, null, 1e21] },
    plain: -0.25,
  };
  await client.syncComputedTrait({ audienceId: trait.id, values: values(sent) });
  const rows = await server.pool.query<{ user_id: string; payload: string }>("SELECT user_id, payload FROM messages WHERE source_id = $1", [
    source.id,
  ]);
  expect(rows.rows).toHaveLength(2);
  for (const row of rows.rows) {
    const body = JSON.parse(row.payload) as { messageId: string; timestamp: string };
    const call = emptyCall("identify");
    call.userId = row.user_id;
    call.traits = { lifetime_value: sent[row.user_id]! };
    expect(row.payload).toBe(buildCallPayload(call, body.messageId, new Date(body.timestamp)));
    expect(body.messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  }
  // The object keeps the order it was sent in, not jsonb's.
  expect(rows.rows.find((r) => r.user_id !== "plain")!.payload).toContain('{"z":1,"a":"é 😀","m":[true,null,1e+21]}');
});

test("invalid values fail the whole sync naming the user, and nothing is applied", async ({ server }) => {
  const { source, trait, client } = await setup(server);
  await client.syncComputedTrait({ audienceId: trait.id, values: values({ u1: 1 }) });
  await clearMessages(server, source.id);

  const bad: Array<[Value, string]> = [
    [create(ValueSchema), "must have a value"],
    [create(ValueSchema, { kind: { case: "numberValue", value: Number.NaN } }), "NaN"],
    [fromJson(ValueSchema, "x".repeat(33 * 1024)), "32 KB"],
    [fromJson(ValueSchema, { "a\u0000b": 1 }), "NUL"],
  ];
  for (const [value, reason] of bad) {
    await expect(
      client.syncComputedTrait({ audienceId: trait.id, values: { u1: fromJson(ValueSchema, 2), u2: value } }),
    ).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringMatching(/^values\["u2"\]: /) });
    await expect(client.syncComputedTrait({ audienceId: trait.id, values: { u2: value } })).rejects.toMatchObject({
      rawMessage: expect.stringContaining(reason),
    });
  }
  await expect(client.syncComputedTrait({ audienceId: trait.id, values: { "": fromJson(ValueSchema, 1) } })).rejects.toMatchObject({
    rawMessage: expect.stringMatching(/^values\[""\]: must not be empty/),
  });

  // Mid-stream failure: the first message was staged, then the second is bad.
  await expect(
    client.streamSyncComputedTrait(
      streamOf([{ audienceId: trait.id, values: values({ u1: 5, u3: 3 }) }, { values: { u4: create(ValueSchema) } }]),
    ),
  ).rejects.toMatchObject({ rawMessage: expect.stringContaining("stream message 2") });

  expect(await storedMembers(server, trait.id)).toEqual({ u1: 1 });
  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [source.id])).toBe(0);
});

test("the streaming computed-trait sync applies across chunks, the later value of a repeated user winning", async ({ server }) => {
  const { source, trait, client } = await setup(server);
  const { counts } = await client.streamSyncComputedTrait(
    streamOf([{ audienceId: trait.id, values: values({ u1: 1, u2: 2 }) }, { values: values({ u2: 20, u3: 3 }) }]),
  );
  expect(counts).toMatchObject({ added: 3n, calls: 3n });
  expect(await storedMembers(server, trait.id)).toEqual({ u1: 1, u2: 20, u3: 3 });
  expect((await identifyCalls(server, source.id)).get("u2")).toEqual({ lifetime_value: 20 });
  // SyncComputedTrait refuses an audience.
  const audience = await createAudience(server, source.id, "Buyers");
  await expect(client.syncComputedTrait({ audienceId: audience.id, values: {} })).rejects.toMatchObject({
    code: Code.InvalidArgument,
    rawMessage: expect.stringContaining("SyncAudience"),
  });
});
