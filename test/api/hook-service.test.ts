import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { expect } from "vitest";
import { HookRequestStatus, HookService } from "../../gen/waypost/v1/hook_pb.js";
import { HookVerifier } from "../../gen/waypost/v1/source_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { hookRequestState, hookSettings, insertHookRequest, makeWebhookSource, setHookSettings } from "../helpers/hook-requests.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();
let hooks: Client<typeof HookService>;

test.beforeAll(async ({ server }) => {
  hooks = createClient(HookService, server.transport);
});

const admin = { headers: { authorization: `Bearer ${"test-admin-token-0123456789"}` } };

async function webhookSource(server: TestServer, settings = hookSettings()): Promise<string> {
  const { id } = await server.createSource("hooks");
  await makeWebhookSource(server.pool, id, settings);
  return id;
}

async function processed(server: TestServer, sourceId: string): Promise<void> {
  server.waypost.hooks!.wake(sourceId);
  await server.waypost.hooks!.idle();
}

const transform =
  "function transform(r) { if (!r.body.user) throw new Error('no user'); return [{ type: 'track', userId: r.body.user, event: 'Paid' }]; }";

test("ListHookRequests: newest first, by status and since, in pages, with the body as text and the calls made", async ({ server }) => {
  const sourceId = await webhookSource(server, hookSettings({ transform }));
  const old = await insertHookRequest(server.pool, sourceId, { body: { user: "a" }, receivedAt: new Date(Date.now() - 3_600_000) });
  const good = await insertHookRequest(server.pool, sourceId, { body: { user: "b" }, headers: { "x-thing": "1" }, query: "a=1" });
  const bad = await insertHookRequest(server.pool, sourceId, { body: "not json" });
  await processed(server, sourceId);

  const all = await hooks.listHookRequests({ sourceId }, admin);
  expect(all.requests.map((r) => r.id)).toEqual([bad, good, old]);
  const [badRequest, goodRequest] = all.requests;
  expect(badRequest).toMatchObject({ status: HookRequestStatus.FAILED, body: "not json", bodyBytes: 8, attempts: 1 });
  expect(badRequest!.error).toBe("transform: Error: no user (line 1)");
  expect(goodRequest).toMatchObject({
    status: HookRequestStatus.PROCESSED,
    method: "POST",
    query: "a=1",
    body: '{"user":"b"}',
    messageIds: [`hook-${good}-0`],
    error: "",
  });
  expect(goodRequest!.headers["x-thing"]).toBe("1");
  expect(goodRequest!.processTime).toBeDefined();

  const failed = await hooks.listHookRequests({ sourceId, status: HookRequestStatus.FAILED }, admin);
  expect(failed.requests.map((r) => r.id)).toEqual([bad]);
  const recent = await hooks.listHookRequests({ sourceId, since: timestampFromDate(new Date(Date.now() - 60_000)) }, admin);
  expect(recent.requests.map((r) => r.id)).toEqual([bad, good]);

  const first = await hooks.listHookRequests({ sourceId, pageSize: 2 }, admin);
  expect(first.requests.map((r) => r.id)).toEqual([bad, good]);
  const second = await hooks.listHookRequests({ sourceId, pageSize: 2, pageToken: first.nextPageToken }, admin);
  expect(second.requests.map((r) => r.id)).toEqual([old]);
  expect(second.nextPageToken).toBe("");
});

test("HookService needs the admin token, and a webhook source", async ({ server }) => {
  const sourceId = await webhookSource(server);
  await expect(hooks.listHookRequests({ sourceId })).rejects.toMatchObject({ code: Code.Unauthenticated });
  const sdk = await server.createSource("sdk");
  const error = await hooks.listHookRequests({ sourceId: sdk.id }, admin).catch((e: unknown) => ConnectError.from(e));
  expect(error).toMatchObject({ code: Code.NotFound });
});

test("ReprocessHookRequests runs failed requests again after a fix, by id or by time, and makes no call twice", async ({ server }) => {
  const sourceId = await webhookSource(server, hookSettings({ transform: "function transform(r) { throw new Error('broken'); }" }));
  const a = await insertHookRequest(server.pool, sourceId, { body: { user: "a" } });
  const b = await insertHookRequest(server.pool, sourceId, { body: { user: "b" } });
  await processed(server, sourceId);
  expect((await hookRequestState(server.pool, a)).status).toBe("failed");
  await setHookSettings(server.pool, sourceId, hookSettings({ transform }));

  const byId = await hooks.reprocessHookRequests({ sourceId, requestIds: [a] }, admin);
  expect(byId.requeued).toBe(1n);
  await server.waypost.hooks!.idle();
  expect(await hookRequestState(server.pool, a)).toMatchObject({ status: "processed", attempts: 2 });
  expect((await hookRequestState(server.pool, b)).status).toBe("failed");

  const since = timestampFromDate(new Date(Date.now() - 60_000));
  // Only the failed one, unless processed ones are asked for too.
  expect((await hooks.reprocessHookRequests({ sourceId, since }, admin)).requeued).toBe(1n);
  await server.waypost.hooks!.idle();
  expect((await hooks.reprocessHookRequests({ sourceId, since, includeProcessed: true }, admin)).requeued).toBe(2n);
  await server.waypost.hooks!.idle();
  const stored = await server.pool.query("SELECT message_id FROM messages WHERE source_id = $1 ORDER BY message_id", [sourceId]);
  expect(stored.rows.map((r) => r.message_id)).toEqual([`hook-${a}-0`, `hook-${b}-0`]);

  await expect(hooks.reprocessHookRequests({ sourceId }, admin)).rejects.toMatchObject({ code: Code.InvalidArgument });
  await expect(hooks.reprocessHookRequests({ sourceId, requestIds: ["1; DROP"] }, admin)).rejects.toMatchObject({
    code: Code.InvalidArgument,
  });
});

test("TestSourceTransform runs a draft, the stored transform or the default mapping over stored requests, storing nothing", async ({
  server,
}) => {
  const sourceId = await webhookSource(server, hookSettings({ verifier: "stripe", transform }));
  // Stored as failed: no processor takes them while they are tested.
  const paid = await insertHookRequest(server.pool, sourceId, { body: { user: "u1", type: "invoice.paid" }, status: "failed" });
  const anonymous = await insertHookRequest(server.pool, sourceId, {
    body: { type: "charge.failed" },
    idempotencyKey: "evt_9",
    status: "failed",
  });

  const stored = await hooks.testSourceTransform({ source: { id: sourceId }, requestIds: [paid, anonymous] }, admin);
  expect(stored.requests.map((r) => r.requestId)).toEqual([paid, anonymous]);
  expect(stored.requests[0]!.calls).toMatchObject([{ messageId: `hook-${paid}-0`, type: "track" }]);
  expect(JSON.parse(stored.requests[0]!.calls[0]!.json)).toEqual({
    type: "track",
    userId: "u1",
    event: "Paid",
    messageId: `hook-${paid}-0`,
  });
  expect(stored.requests[1]).toMatchObject({ calls: [], error: "transform: Error: no user (line 1)" });

  const draft = await hooks.testSourceTransform(
    {
      source: {
        id: sourceId,
        webhook: {
          transform: "function transform(r) { return [1, 2].map(function (n) { return { type: 'identify', anonymousId: 'x' + n }; }); }",
        },
      },
      sampleSize: 1,
    },
    admin,
  );
  expect(draft.requests.map((r) => r.requestId)).toEqual([anonymous]);
  expect(draft.requests[0]!.calls.map((c) => c.messageId)).toEqual([`hook-${anonymous}-0`, `hook-${anonymous}-1`]);

  // No transform on a draft or the source: the default mapping (the draft's verifier names the event).
  await setHookSettings(server.pool, sourceId, hookSettings({ verifier: "stripe" }));
  const mapped = await hooks.testSourceTransform({ source: { id: sourceId }, requestIds: [anonymous] }, admin);
  expect(JSON.parse(mapped.requests[0]!.calls[0]!.json)).toMatchObject({ event: "charge.failed", anonymousId: "evt_9" });
  const asGeneric = await hooks.testSourceTransform(
    { source: { id: sourceId, webhook: { verifier: HookVerifier.NONE } }, requestIds: [anonymous] },
    admin,
  );
  expect(JSON.parse(asGeneric.requests[0]!.calls[0]!.json)).toMatchObject({ event: "Webhook Received" });

  const syntax = await hooks
    .testSourceTransform({ source: { id: sourceId, webhook: { transform: "function transform(r) {" } } }, admin)
    .catch((e: unknown) => ConnectError.from(e));
  expect(syntax).toMatchObject({ code: Code.InvalidArgument });

  // Nothing was stored or processed.
  expect((await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [sourceId])).rows[0].n).toBe(0);
  expect(await hookRequestState(server.pool, paid)).toMatchObject({ status: "failed", attempts: 0 });
});
