import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { claimStatementSql } from "../../../../src/db/job-table/claim.js";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import type { ClaimOptions } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/citus-job-table.js";

// The claim on the three-node cluster: per destination, on its shard, with
// the same rules as on one Postgres.
describe.skipIf(!citusUrl)(`the claim on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");
  const claim = (options: Partial<ClaimOptions>) =>
    citusJobTable.claimDeliveries(pool, {
      now,
      limit: 100,
      perDestinationLimit: 100,
      room: new Map(),
      leaseMs: 30_000,
      owner: "test",
      ...options,
    });

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
  }, 120_000);
  afterAll(async () => close?.());

  test("takes due deliveries of enabled destinations only, with their messages", async () => {
    const open = await seedDestination(pool, source, now);
    const paused = await seedDestination(pool, source, now, { enabled: false });
    const messages = await seedMessages(pool, source, now, ["a", "b", "c"]);
    const due = await seedDeliveries(pool, open, messages.slice(0, 2), new Date(now.getTime() - 1_000));
    await seedDeliveries(pool, open, messages.slice(2), new Date(now.getTime() + 60_000));
    await seedDeliveries(pool, paused, messages, new Date(now.getTime() - 1_000));
    const result = await claim({});
    expect(result.deliveries.map((d) => d.id).sort()).toEqual([...due].sort());
    const first = result.deliveries.find((d) => d.id === due[0])!;
    expect(first.destinationId).toBe(open);
    expect(JSON.parse(first.payload)).toMatchObject({ userId: "a" });
    expect(first.sourceId).toBe(source);
    expect(first.leaseToken).toBe(1);
    // Leased now: a second claim finds nothing.
    expect((await claim({})).deliveries).toEqual([]);
  });

  test("respects room, the per-destination limit and the limit, and rotates the destination it starts with", async () => {
    // The earlier tests' destinations are out of the way.
    await pool.query("UPDATE destinations SET enabled = false");
    const at = new Date(now.getTime() + 3_600_000);
    const [a, b, full] = [
      await seedDestination(pool, source, at),
      await seedDestination(pool, source, at),
      await seedDestination(pool, source, at),
    ];
    for (const destination of [a, b, full]) {
      await seedDeliveries(pool, destination, await seedMessages(pool, source, at, ["1", "2", "3", "4", "5", "6"]), at);
    }
    const later = new Date(at.getTime() + 1_000);
    const room = new Map([
      [a, 2],
      [full, 0],
    ]);
    const first = await citusJobTable.claimDeliveries(pool, {
      now: later,
      limit: 4,
      perDestinationLimit: 3,
      room,
      leaseMs: 30_000,
      owner: "t",
    });
    const count = (ds: { destinationId: string }[], id: string) => ds.filter((d) => d.destinationId === id).length;
    expect(first.deliveries).toHaveLength(4);
    expect(count(first.deliveries, full)).toBe(0);
    // Whichever destination this claim starts with, a takes at most its room and b at most the per-destination limit.
    expect(count(first.deliveries, a)).toBeGreaterThanOrEqual(1);
    expect(count(first.deliveries, a)).toBeLessThanOrEqual(2);
    expect(count(first.deliveries, b)).toBeGreaterThanOrEqual(2);
    expect(count(first.deliveries, b)).toBeLessThanOrEqual(3);
    // limit 1: consecutive claims start at different destinations.
    const starts = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const one = await citusJobTable.claimDeliveries(pool, {
        now: later,
        limit: 1,
        perDestinationLimit: 3,
        room,
        leaseMs: 30_000,
        owner: "t",
      });
      expect(one.deliveries).toHaveLength(1);
      starts.add(one.deliveries[0]!.destinationId);
    }
    expect(starts).toEqual(new Set([a, b]));
  });

  test("two claimers at once take each delivery once (SKIP LOCKED on the shard)", async () => {
    const at = new Date(now.getTime() + 7_200_000);
    const destination = await seedDestination(pool, source, at);
    const ids = await seedDeliveries(
      pool,
      destination,
      await seedMessages(
        pool,
        source,
        at,
        Array.from({ length: 60 }, (_, i) => `u${i}`),
      ),
      at,
    );
    const taken: string[] = [];
    for (let round = 0; round < 12; round++) {
      const both = await Promise.all(
        [1, 2].map(() =>
          citusJobTable.claimDeliveries(pool, { now: at, limit: 5, perDestinationLimit: 5, room: new Map(), leaseMs: 30_000, owner: "t" }),
        ),
      );
      for (const result of both) taken.push(...result.deliveries.filter((d) => d.destinationId === destination).map((d) => d.id));
    }
    expect(new Set(taken).size).toBe(taken.length);
    expect([...taken].sort()).toEqual([...ids].sort());
  });

  test("takes no more than the rate bucket's whole tokens, and says when it refills", async () => {
    const at = new Date(now.getTime() + 10_800_000);
    const destination = await seedDestination(pool, source, at, { rate: 10, tokens: 3 });
    await seedDeliveries(pool, destination, await seedMessages(pool, source, at, ["1", "2", "3", "4", "5", "6"]), at);
    const result = await claim({ now: at });
    expect(result.deliveries.filter((d) => d.destinationId === destination)).toHaveLength(3);
    expect(result.refillWaitMs).toBeGreaterThan(0);
    const bucket = await pool.query<{ tokens: number }>("SELECT tokens FROM destination_rate_buckets WHERE destination_id = $1", [
      destination,
    ]);
    expect(bucket.rows[0]!.tokens).toBeLessThan(1);
    // Out of tokens: nothing more until they refill.
    expect((await claim({ now: at })).deliveries.filter((d) => d.destinationId === destination)).toHaveLength(0);
  });

  test("keeps per-user order: only each user's earliest queued delivery", async () => {
    const at = new Date(now.getTime() + 14_400_000);
    const destination = await seedDestination(pool, source, at, { ordering: "per_user" });
    const ids = await seedDeliveries(pool, destination, await seedMessages(pool, source, at, ["u1", "u1", "u2", "u1"]), at, true);
    const result = await claim({ now: at });
    expect(
      result.deliveries
        .filter((d) => d.destinationId === destination)
        .map((d) => d.id)
        .sort(),
    ).toEqual([ids[0], ids[2]].sort());
  });

  test("holds back a destination backing off, and takes exactly one probe of an open circuit", async () => {
    const at = new Date(now.getTime() + 18_000_000);
    const backing = await seedDestination(pool, source, at);
    const open = await seedDestination(pool, source, at);
    for (const destination of [backing, open])
      await seedDeliveries(pool, destination, await seedMessages(pool, source, at, ["1", "2", "3"]), at);
    await pool.query("INSERT INTO destination_health (destination_id, backoff_until, updated_at) VALUES ($1, $2, $3)", [
      backing,
      new Date(at.getTime() + 60_000),
      at,
    ]);
    await pool.query(
      "INSERT INTO destination_health (destination_id, state, opened_at, cooldown_ms, probe_at, updated_at) VALUES ($1, 'open', $2, 1000, $2, $2)",
      [open, at],
    );
    const result = await claim({ now: at });
    expect(result.deliveries.filter((d) => d.destinationId === backing)).toHaveLength(0);
    const probes = result.deliveries.filter((d) => d.destinationId === open);
    expect(probes).toHaveLength(1);
    expect(probes[0]!.probe).toBe(true);
    const health = await pool.query<{ state: string; probe_delivery_id: string }>(
      "SELECT state, probe_delivery_id FROM destination_health WHERE destination_id = $1",
      [open],
    );
    expect(health.rows[0]).toEqual({ state: "half_open", probe_delivery_id: probes[0]!.id });
    // The probe is in flight: no second one.
    expect((await claim({ now: at })).deliveries.filter((d) => d.destinationId === open)).toHaveLength(0);
  });

  test("the per-destination claim statement is one router task on one shard", async () => {
    const destination = await seedDestination(pool, source, now);
    const plan = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${claimStatementSql("$8::uuid", "$9")}`, [
      now,
      10,
      10,
      30_000,
      "t",
      [],
      [],
      destination,
      [],
    ]);
    const lines = plan.rows.map((row) => row["QUERY PLAN"]);
    expect(lines.filter((line) => /Task Count/.test(line)).map((line) => line.trim())).toEqual(["Task Count: 1"]);
    expect(lines.some((line) => /Distributed Subplan/.test(line))).toBe(false);
  });
});
