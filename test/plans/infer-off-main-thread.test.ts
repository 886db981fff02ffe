import { monitorEventLoopDelay } from "node:perf_hooks";
import { expect } from "vitest";
import { inferPlan } from "../../src/plans/infer-plan.js";
import { threadCpuClock } from "../../src/sandbox/cpu-budget.js";
import { parseIdentity } from "../../src/identity-config.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

// InferTrackingPlan parses thousands of stored bodies: that work runs in a
// worker thread, so the server's event loop (every other request) does not
// wait behind it.

// Without identity resolution: its resolver would be other main-thread work over the same stored calls.
const test = testWith({ server: { config: { identity: parseIdentity({ WAYPOST_IDENTITY: "off" }) } } });

/** Stores `calls` track calls of about 20 KB, each with `keys` keys of its own. */
async function storeWideCalls(server: TestServer, sourceId: string, calls: number, keys: number): Promise<void> {
  await server.pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'wide-' || i, 'track', 'u', now(),
            json_build_object('type', 'track', 'event', 'Wide ' || (i % 50), 'userId', 'u',
              'properties', (SELECT json_object_agg('k' || i || '_' || j, j) FROM generate_series(1, $3::int) j))::text
       FROM generate_series(1, $2::int) i`,
    [sourceId, calls, keys],
  );
}

test("the main thread spends a fraction of the inference's work on it, and Track calls are answered while it runs", async ({ server }) => {
  const source = await server.createSource("wide-calls");
  await storeWideCalls(server, source.id, 1_000, 1_400);
  // Another source's calls: the inferred one's stay as they are.
  const tracking = server.tracking((await server.createSource("meanwhile")).writeKey);

  // What inferring from these bodies costs on the main thread (the server runs in this process).
  const clock = threadCpuClock();
  const { rows } = await server.pool.query<{ payload: string }>("SELECT payload FROM messages WHERE source_id = $1", [source.id]);
  const parsing = clock.nowMs();
  inferPlan(
    rows.map((row) => row.payload),
    "reference",
  );
  const inferenceCpuMs = clock.nowMs() - parsing;

  const infer = () =>
    fetch(`${server.url}/waypost.v1.TrackingPlanService/InferTrackingPlan`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
      body: JSON.stringify({ sourceId: source.id }),
    });

  // Alone: what the main thread spends while the server infers.
  const before = clock.nowMs();
  const response = await infer();
  const body = await response.text();
  const mainThreadCpuMs = clock.nowMs() - before;
  expect(response.status, body).toBe(200);
  const answer = JSON.parse(body) as { plan: { events: Record<string, unknown> }; callsRead: string };
  expect(Number(answer.callsRead)).toBe(1_000);
  expect(Object.keys(answer.plan.events)).toHaveLength(50);
  // The inference did not run on the main thread: its CPU meanwhile (reading the rows and
  // handing them over) is well under what the parsing alone costs there.
  expect(mainThreadCpuMs, `main thread ${mainThreadCpuMs} ms, parsing ${inferenceCpuMs} ms`).toBeLessThan(inferenceCpuMs / 2);

  // Again, with Track calls: they are answered while it runs, and the loop never froze for a page.
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let done = false;
  const again = infer().finally(() => {
    done = true;
  });
  let answeredDuring = 0;
  while (!done) {
    await tracking.track({ track: { userId: "u", event: "Meanwhile" } });
    if (!done) answeredDuring += 1;
  }
  expect((await again).status).toBe(200);
  delay.disable();
  expect(answeredDuring).toBeGreaterThan(0);
  // A bound for a freeze, not a speed check.
  expect(delay.max / 1e6).toBeLessThan(2_000);
}, 240_000);
