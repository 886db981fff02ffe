import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { listViolations } from "../../src/db/queries/plan-violations.js";
import { createLogger } from "../../src/logger.js";
import { createMetrics } from "../../src/metrics.js";
import type { Violation } from "../../src/plans/check-call.js";
import { createViolationRecorder } from "../../src/plans/violation-recorder.js";
import type { Pool } from "../../src/db/pool.js";
import { testWith } from "../helpers/fixtures.js";

const test = testWith();

async function newSource(pool: Pool): Promise<string> {
  const id = randomUUID();
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 'recorder', $2)", [id, Buffer.from(id)]);
  return id;
}

const wrongType = (example: string): Violation => ({
  callType: "track",
  event: "Paid",
  path: "properties.total",
  kind: "wrong_type",
  message: "must be number",
  example,
});

test("counts add up in memory and across flushes; first seen stays, last seen and the example move on", async ({ pool }) => {
  const metrics = createMetrics();
  const recorder = createViolationRecorder({ pool, logger: createLogger("silent"), metrics });
  const source = await newSource(pool);
  const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  recorder.record(source, [wrongType('"a"')], t(10));
  recorder.record(source, [wrongType('"b"'), wrongType('"b"')], t(20));
  await recorder.flush();
  recorder.record(source, [wrongType('"c"')], t(5));
  recorder.record(source, [wrongType('"d"')], t(30));
  await recorder.flush();
  const [row, ...rest] = await listViolations(pool, { sourceId: source, since: undefined, limit: 10 });
  expect(rest).toEqual([]);
  expect(row).toMatchObject({ count: 5, firstSeen: t(5), lastSeen: t(30), example: '"d"' });
  expect((await listViolations(pool, { sourceId: source, since: t(31), limit: 10 })).length).toBe(0);
  // A flush of older counts (another process's, say) adds up but keeps the newer example.
  recorder.record(source, [wrongType('"old"')], t(1));
  await recorder.flush();
  const [later] = await listViolations(pool, { sourceId: source, since: undefined, limit: 10 });
  expect(later).toMatchObject({ count: 6, firstSeen: t(1), lastSeen: t(30), example: '"d"' });
  expect(await metrics.registry.getSingleMetricAsString("waypost_plan_violations_total")).toContain(
    `waypost_plan_violations_total{source_id="${source}",kind="wrong_type"} 6`,
  );
});

test("a source deleted before the flush is skipped; the others are written", async ({ pool }) => {
  const recorder = createViolationRecorder({ pool, logger: createLogger("silent") });
  const kept = await newSource(pool);
  const gone = await newSource(pool);
  recorder.record(kept, [wrongType("1")], new Date());
  recorder.record(gone, [wrongType("2")], new Date());
  await pool.query("DELETE FROM sources WHERE id = $1", [gone]);
  await recorder.stop();
  expect((await listViolations(pool, { sourceId: kept, since: undefined, limit: 10 })).map((v) => v.count)).toEqual([1]);
  expect(await listViolations(pool, { sourceId: gone, since: undefined, limit: 10 })).toEqual([]);
});
