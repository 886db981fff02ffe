import { createClient, type Client } from "@connectrpc/connect";
import { expect } from "vitest";
import { HookService } from "../../../gen/waypost/v1/hook_pb.js";
import { loadTheMachine } from "../../helpers/busy-machine.js";
import { hookRequestState, hookSettings, insertHookRequest, makeWebhookSource } from "../../helpers/hook-requests.js";
import { testWith } from "../../helpers/fixtures.js";

// A webhook source's transform is held to its CPU time, live as in
// TestSourceTransform: a busy machine (and the main thread validating one
// request's calls while the next request's transform runs) fails neither.

let hooks: Client<typeof HookService>;

const test = testWith();
test.beforeAll(async ({ server }) => {
  hooks = createClient(HookService, server.transport);
});

const admin = { headers: { authorization: `Bearer ${"test-admin-token-0123456789"}` } };

// The most calls one request may make: about 20 ms of the interpreter's CPU.
const fullBatch = `function transform(r) {
  var out = [];
  for (var i = 0; i < 2500; i++) out.push({ type: "track", anonymousId: "a" + r.body.n, event: "E" });
  return out;
}`;

test("a transform returning 2,500 calls is processed live as it tests, on a machine loaded past its cores", async ({ server }) => {
  const { id: sourceId } = await server.createSource("full-batches");
  await makeWebhookSource(server.pool, sourceId, hookSettings({ transform: fullBatch }));
  const ids: string[] = [];
  for (let n = 0; n < 4; n++) ids.push(await insertHookRequest(server.pool, sourceId, { body: { n } }));

  const machine = await loadTheMachine();
  let tested: Awaited<ReturnType<typeof hooks.testSourceTransform>>;
  try {
    server.waypost.hooks!.wake(sourceId);
    await server.waypost.hooks!.idle();
    tested = await hooks.testSourceTransform({ source: { id: sourceId }, requestIds: ids }, admin);
  } finally {
    await machine.stop();
  }
  for (const id of ids) {
    const state = await hookRequestState(server.pool, id);
    expect(state, JSON.stringify(state.error)).toMatchObject({ status: "processed", error: null });
    expect(state.message_ids).toHaveLength(2_500);
  }
  expect(tested.requests.map((r) => [r.error, r.calls.length])).toEqual(ids.map(() => ["", 2_500]));
}, 240_000);
