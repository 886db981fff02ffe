import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { expect } from "vitest";
import { HookRequestStatus, HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { HookVerifier, SourceKind } from "../../../gen/waypost/v1/source_pb.js";
import { postHook } from "../../helpers/hook-sources.js";
import { testWith } from "../../helpers/fixtures.js";
import { testAdminToken } from "../../helpers/server.js";

// The whole way over HTTP and RPC: a source made with CreateSource, requests
// POSTed to its inbound URL, a transform that fails, fixed with UpdateSource,
// the requests reprocessed: each call arrives once at a webhook destination.
let hooks: Client<typeof HookService>;
const admin = { headers: { authorization: `Bearer ${testAdminToken}` } };

const test = testWith();
test.beforeAll(async ({ server }) => {
  hooks = createClient(HookService, server.transport);
});

test("POSTed requests fail under a broken transform, and after UpdateSource and ReprocessHookRequests each call arrives once", async ({
  server,
  receiver,
}) => {
  const { source } = await server.sources.createSource({
    source: {
      name: "shop",
      kind: SourceKind.WEBHOOK,
      webhook: {
        verifier: HookVerifier.NONE,
        idempotencyKey: "$.id",
        transform: "function transform(request) { return request.body.nope.x; }",
      },
    },
  });
  await server.createDestination({ name: "crm", sourceIds: [source!.id], webhooks: [{ url: receiver.url }] });
  const url = `${server.url}/hooks/${source!.hookToken}`;
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  for (const [body, headers] of [
    ['{"id":"o1","customer":"c1","total":10}', { traceparent }],
    ['{"id":"o2","customer":"c2","total":20}', {}],
    // A resend of o1: acknowledged, not processed.
    ['{"id":"o1","customer":"c1","total":10}', {}],
  ] as const) {
    expect((await postHook(url, body, headers)).status).toBe(200);
  }
  await server.waypost.hooks!.idle();
  const listed = await hooks.listHookRequests({ sourceId: source!.id }, admin);
  expect(listed.requests.map((r) => r.status)).toEqual([HookRequestStatus.DUPLICATE, HookRequestStatus.FAILED, HookRequestStatus.FAILED]);
  expect(listed.requests[1]!.error).toMatch(/^transform: TypeError: .* \(line 1\)$/);

  await server.sources.updateSource({
    source: {
      id: source!.id,
      webhook: {
        verifier: HookVerifier.NONE,
        idempotencyKey: "$.id",
        transform: `function transform(request) {
          var b = request.body;
          return [
            { type: "identify", userId: b.customer, traits: { lastOrder: b.id } },
            { type: "track", userId: b.customer, event: "Order Placed", properties: { orderId: b.id, total: b.total } },
          ];
        }`,
      },
    },
    updateMask: { paths: ["webhook"] },
  });
  const tested = await hooks.testSourceTransform({ source: { id: source!.id }, sampleSize: 5 }, admin);
  expect(tested.requests.flatMap((r) => r.calls.map((c) => c.type))).toEqual(["identify", "track", "identify", "track"]);
  expect(receiver.requests).toEqual([]);

  const { requeued } = await hooks.reprocessHookRequests({ sourceId: source!.id, since: timestampFromDate(new Date(0)) }, admin);
  expect(requeued).toBe(2n);
  await server.waypost.hooks!.idle();
  // Once more with the processed ones: nothing new is made.
  await hooks.reprocessHookRequests({ sourceId: source!.id, since: timestampFromDate(new Date(0)), includeProcessed: true }, admin);
  await server.waypost.hooks!.idle();

  const arrived = await receiver.waitForRequests(4);
  const bodies = arrived.map((r) => JSON.parse(r.body) as { messageId: string; type: string; userId: string });
  const [o1, o2] = [listed.requests[2]!.id, listed.requests[1]!.id];
  expect(bodies.map((b) => b.messageId).sort()).toEqual([`hook-${o1}-0`, `hook-${o1}-1`, `hook-${o2}-0`, `hook-${o2}-1`].sort());
  const first = arrived.find((r) => (JSON.parse(r.body) as { messageId: string }).messageId === `hook-${o1}-0`)!;
  expect(first.headers.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-/);
  const after = await hooks.listHookRequests({ sourceId: source!.id, status: HookRequestStatus.PROCESSED }, admin);
  expect(after.requests.map((r) => [r.id, r.attempts, r.messageIds.length])).toEqual([
    [o2, 3, 2],
    [o1, 3, 2],
  ]);
  const stored = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source!.id]);
  expect(stored.rows[0].n).toBe(4);
});
