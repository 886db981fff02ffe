import { expect } from "vitest";
import { claimDeliveries, type ClaimedDelivery } from "../../../src/db/job-table/index.js";
import { createPool, type Pool } from "../../../src/db/pool.js";
import { storeMessages } from "../../../src/db/job-table/store-messages.js";
import { testWith } from "../../helpers/fixtures.js";
import { deleteMessages, seedSourceAndDestination } from "../../helpers/job-table-fixtures.js";

// The claim's side of endpoint health, against the table directly: which
// destinations it holds back, and that a due probe goes to one claim only.
const minute = 60_000;
const test = testWith();
// A second claimer's pool, beside the file's: a probe goes to one of two claiming at once.
let other: Pool;
let sourceId: string;
let destinationId: string;
const t0 = new Date("2026-11-01T00:00:00Z");
const later = (ms: number) => new Date(t0.getTime() + ms);

test.beforeAll(({ database }) => {
  other = createPool({ connectionString: database.url });
});
test.afterAll(() => other?.end());

test.beforeEach(async ({ pool }) => {
  await deleteMessages(pool);
  await pool.query("DELETE FROM destination_health");
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, t0));
  await storeMessages(
    pool,
    sourceId,
    t0,
    Array.from({ length: 5 }, (_, i) => ({
      messageId: `m-${i}`,
      type: "track" as const,
      userId: "u",
      payload: JSON.stringify({ messageId: `m-${i}` }),
      integrations: undefined,
    })),
  );
});

async function claim(pool: Pool, now: Date, owner = "a"): Promise<ClaimedDelivery[]> {
  return (await claimDeliveries(pool, { now, limit: 10, perDestinationLimit: 10, room: new Map(), leaseMs: minute, owner })).deliveries;
}

async function setHealth(pool: Pool, fields: Record<string, unknown>) {
  const names = Object.keys(fields);
  await pool.query(
    `INSERT INTO destination_health (destination_id, updated_at, ${names.join(", ")})
     VALUES ($1, $2, ${names.map((_, i) => `$${i + 3}`).join(", ")})`,
    [destinationId, t0, ...Object.values(fields)],
  );
}

async function health(pool: Pool) {
  return (await pool.query("SELECT * FROM destination_health WHERE destination_id = $1", [destinationId])).rows[0];
}

test("a closed circuit claims as before, with the message id", async ({ pool }) => {
  await setHealth(pool, { state: "closed" });
  const jobs = await claim(pool, t0);
  expect(jobs).toHaveLength(5);
  expect(jobs.every((j) => !j.probe)).toBe(true);
  expect(new Set(jobs.map((j) => j.messageId))).toEqual(new Set(["m-0", "m-1", "m-2", "m-3", "m-4"]));
});

test("a back-off holds every delivery until it ends", async ({ pool }) => {
  await setHealth(pool, { state: "closed", backoff_until: later(minute) });
  expect(await claim(pool, later(minute - 1))).toEqual([]);
  expect(await claim(pool, later(minute))).toHaveLength(5);
});

test("an open circuit: nothing before the probe time, then one probe for one of two claiming at once", async ({ pool }) => {
  await setHealth(pool, { state: "open", probe_at: later(30_000), cooldown_ms: 30_000, opened_at: t0 });
  expect(await claim(pool, later(29_999))).toEqual([]);
  const [a, b] = await Promise.all([claim(pool, later(30_000), "a"), claim(other, later(30_000), "b")]);
  const probes = [...a!, ...b!];
  expect(probes).toHaveLength(1);
  expect(probes[0]!.probe).toBe(true);
  const row = await health(pool);
  expect(row).toMatchObject({ state: "half_open", probe_delivery_id: probes[0]!.id });
  expect(row.probe_until).toEqual(later(30_000 + minute));
  // While the probe is out, nothing else; once its lease has run out, another probe.
  expect(await claim(pool, later(30_000 + minute - 1))).toEqual([]);
  const again = await claim(pool, later(30_000 + minute));
  expect(again).toHaveLength(1);
  expect(again[0]!.probe).toBe(true);
});

test("a probe due during a back-off waits for the back-off", async ({ pool }) => {
  await setHealth(pool, { state: "open", probe_at: t0, cooldown_ms: 30_000, opened_at: t0, backoff_until: later(minute) });
  expect(await claim(pool, later(1))).toEqual([]);
  expect(await claim(pool, later(minute))).toHaveLength(1);
});
