import { monitorEventLoopDelay } from "node:perf_hooks";
import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { compilePlan } from "../../src/plans/compile-plan.js";
import { defaultInferenceLimits } from "../../src/plans/infer-plan.js";
import { readPlanDocument } from "../../src/plans/plan-document.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { adminTransport } from "./support.js";

const test = testWith();

/** Stores `calls` track calls straight into the database, each with `keys` keys no other call has. */
async function storeHostileCalls(target: TestServer, sourceId: string, calls: number, keys: number): Promise<void> {
  await target.pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'hostile-' || i, 'track', 'u', now(),
            json_build_object('type', 'track', 'event', 'Hostile', 'userId', 'u',
              'properties', (SELECT json_object_agg('k' || i || '_' || j, j) FROM generate_series(1, $3::int) j))::text
       FROM generate_series(1, $2::int) i`,
    [sourceId, calls, keys],
  );
}

test("inference over calls with 1,400 new keys each is bounded in keys and size, and Track calls are answered meanwhile", async ({
  server,
}) => {
  const source = await server.createSource("hostile-keys");
  await storeHostileCalls(server, source.id, 600, 1400);
  const tracking = server.tracking(source.writeKey);

  const rssBefore = process.memoryUsage().rss;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let done = false;
  const inferring = fetch(`${server.url}/waypost.v1.TrackingPlanService/InferTrackingPlan`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
    body: JSON.stringify({ sourceId: source.id }),
  }).finally(() => {
    done = true;
  });
  // Track calls sent while inference runs are answered while it runs.
  let answeredDuring = 0;
  while (!done) {
    await tracking.track({ track: { userId: "u", event: "Meanwhile" } });
    if (!done) answeredDuring += 1;
  }
  const response = await inferring;
  delay.disable();
  const body = await response.text();
  const rssGrowthMb = (process.memoryUsage().rss - rssBefore) / 1e6;
  expect(response.status, body).toBe(200);
  const answer = JSON.parse(body) as { plan: Record<string, any>; callsRead: string };
  expect(Number(answer.callsRead)).toBeGreaterThanOrEqual(600);

  const schema = answer.plan.events.Hostile.properties;
  expect(Object.keys(schema.properties).length).toBeLessThanOrEqual(defaultInferenceLimits.maxKeysPerObject);
  expect(schema.additionalProperties).toEqual({ type: "number" });
  expect(answer.plan.description).toContain("additionalProperties");
  // 840,000 distinct keys would be tens of MB; the bounded plan is a few KB.
  expect(Buffer.byteLength(body)).toBeLessThan(100_000);
  expect(answeredDuring).toBeGreaterThan(0);
  // No long stall of the event loop and no memory in proportion to the keys (bounds for a freeze
  // and a blow-up, not speed or size checks: unbounded, this took 10 s of frozen loop and 1.2 GB).
  expect(delay.max / 1e6).toBeLessThan(2000);
  expect(rssGrowthMb).toBeLessThan(500);
  // What it infers can be applied.
  compilePlan(readPlanDocument(answer.plan));
});

test("a plan over the admin answer cap is resource_exhausted, not sent", async ({ server }) => {
  const small = await startTestServer({
    database: server.database,
    config: { adminReads: { connections: 2, statementTimeoutMs: 15_000, maxResponseBytes: 2000 } },
  });
  try {
    const source = await small.createSource("wide-plan");
    await storeHostileCalls(small, source.id, 3, 50);
    const error = await createClient(TrackingPlanService, adminTransport(small))
      .inferTrackingPlan({ sourceId: source.id })
      .catch((e) => e as Error);
    expect(String(error)).toContain("over the limit of 2000 bytes of an admin answer");
    expect((error as { code?: number }).code).toBe(8);
  } finally {
    await small.stopService();
  }
});
