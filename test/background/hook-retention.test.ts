import { expect } from "vitest";
import { createMaintenance } from "../../src/background/maintenance.js";
import { createLogger } from "../../src/logger.js";
import { hookSettings, insertHookRequest, makeWebhookSource } from "../helpers/hook-requests.js";
import { testWith } from "../helpers/fixtures.js";
import { singleNodeJobTable } from "../../src/db/job-table/index.js";

const day = 24 * 3_600_000;
const test = testWith();

test("webhook requests are kept as long as calls: maintenance deletes those received before retention", async ({ server }) => {
  const { id: sourceId } = await server.createSource("hooks");
  await makeWebhookSource(server.pool, sourceId, hookSettings());
  const now = Date.now();
  // Stored as failed, so no processor touches them meanwhile.
  const old = await insertHookRequest(server.pool, sourceId, { receivedAt: new Date(now - 8 * day), status: "failed" });
  const oldPending = await insertHookRequest(server.pool, sourceId, { receivedAt: new Date(now - 7 * day - 60_000), status: "failed" });
  const kept = await insertHookRequest(server.pool, sourceId, { receivedAt: new Date(now - 6 * day), status: "failed" });
  const maintenance = createMaintenance({
    pool: server.pool,
    jobTable: singleNodeJobTable,
    clock: server.clock,
    logger: createLogger("silent"),
    retentionMs: 7 * day,
    deadlineMs: day,
  });
  expect((await maintenance.runOnce()).hookRequestsPurged).toBe(2);
  const left = await server.pool.query("SELECT id FROM hook_requests WHERE id = ANY($1::bigint[]) ORDER BY id", [[old, oldPending, kept]]);
  expect(left.rows.map((r) => r.id)).toEqual([kept]);
});
