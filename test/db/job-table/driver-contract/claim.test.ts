import { expect, test } from "vitest";
import type { ClaimOptions } from "../../../../src/db/job-table/index.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";
import { describeEachDriver } from "./drivers.js";

// The claim: due deliveries of enabled destinations, within room, limits,
// rate buckets, per-user order and endpoint health, each taken once.
describeEachDriver("the claim", (driver, db) => {
  const now = new Date("2026-11-28T12:00:00Z");
  const hours = (n: number) => new Date(now.getTime() + n * 3_600_000);
  const claim = (options: Partial<ClaimOptions>) =>
    driver.claimDeliveries(db.pool, {
      now,
      limit: 100,
      perDestinationLimit: 100,
      room: new Map(),
      leaseMs: 30_000,
      owner: "test",
      ...options,
    });
  const of = <T extends { destinationId: string }>(destination: string, deliveries: readonly T[]) =>
    deliveries.filter((d) => d.destinationId === destination);

  test("takes due deliveries of enabled destinations only, with their messages", async () => {
    const source = await seedSource(db.pool);
    const open = await seedDestination(db.pool, source, now);
    const paused = await seedDestination(db.pool, source, now, { enabled: false });
    const messages = await seedMessages(db.pool, source, now, ["a", "b", "c"]);
    const due = await seedDeliveries(db.pool, open, messages.slice(0, 2), new Date(now.getTime() - 1_000));
    await seedDeliveries(db.pool, open, messages.slice(2), new Date(now.getTime() + 60_000));
    await seedDeliveries(db.pool, paused, messages, new Date(now.getTime() - 1_000));
    const result = await claim({});
    expect(result.deliveries.map((d) => d.id).sort()).toEqual([...due].sort());
    const first = result.deliveries.find((d) => d.id === due[0])!;
    expect(first).toMatchObject({ destinationId: open, sourceId: source, leaseToken: 1, attemptCount: 0 });
    expect(JSON.parse(first.payload)).toMatchObject({ userId: "a" });
    // Leased now: a second claim finds nothing.
    expect((await claim({})).deliveries).toEqual([]);
  });

  test("respects room, the per-destination limit and the limit", async () => {
    // The earlier tests' destinations are out of the way.
    await db.pool.query("UPDATE destinations SET enabled = false");
    const source = await seedSource(db.pool);
    const at = hours(1);
    const [a, b, full] = [
      await seedDestination(db.pool, source, at),
      await seedDestination(db.pool, source, at),
      await seedDestination(db.pool, source, at),
    ];
    for (const destination of [a, b, full]) {
      await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, at, ["1", "2", "3", "4", "5", "6"]), at);
    }
    const room = new Map([
      [a, 2],
      [full, 0],
    ]);
    const { deliveries } = await claim({ now: new Date(at.getTime() + 1_000), limit: 4, perDestinationLimit: 3, room });
    expect(deliveries).toHaveLength(4);
    expect(of(full, deliveries)).toHaveLength(0);
    // Whichever destination the claim starts with, a takes at most its room and b at most the per-destination limit.
    expect(of(a, deliveries).length).toBeGreaterThanOrEqual(1);
    expect(of(a, deliveries).length).toBeLessThanOrEqual(2);
    expect(of(b, deliveries).length).toBeGreaterThanOrEqual(2);
    expect(of(b, deliveries).length).toBeLessThanOrEqual(3);
  });

  test("two claimers at once take each delivery once", async () => {
    const source = await seedSource(db.pool);
    const at = hours(2);
    const destination = await seedDestination(db.pool, source, at);
    const users = Array.from({ length: 60 }, (_, i) => `u${i}`);
    const ids = await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, at, users), at);
    const taken: string[] = [];
    // Each claim skips what the other has locked: the rounds go on until all are taken (60 rounds bound a claim that stalls).
    for (let round = 0; round < 60 && taken.length < ids.length; round++) {
      const both = await Promise.all([1, 2].map(() => claim({ now: at, limit: 5, perDestinationLimit: 5 })));
      for (const result of both) taken.push(...of(destination, result.deliveries).map((d) => d.id));
    }
    expect(new Set(taken).size).toBe(taken.length);
    expect([...taken].sort()).toEqual([...ids].sort());
  });

  test("takes no more than the rate bucket's whole tokens, and says when it refills", async () => {
    const source = await seedSource(db.pool);
    const at = hours(3);
    const destination = await seedDestination(db.pool, source, at, { rate: 10, tokens: 3 });
    await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, at, ["1", "2", "3", "4", "5", "6"]), at);
    const result = await claim({ now: at });
    expect(of(destination, result.deliveries)).toHaveLength(3);
    expect(result.refillWaitMs).toBeGreaterThan(0);
    const bucket = await db.pool.query<{ tokens: number }>("SELECT tokens FROM destination_rate_buckets WHERE destination_id = $1", [
      destination,
    ]);
    expect(bucket.rows[0]!.tokens).toBeLessThan(1);
    // Out of tokens: nothing more until they refill.
    expect(of(destination, (await claim({ now: at })).deliveries)).toHaveLength(0);
  });

  test("keeps per-user order: only each user's earliest queued delivery", async () => {
    const source = await seedSource(db.pool);
    const at = hours(4);
    const destination = await seedDestination(db.pool, source, at, { ordering: "per_user" });
    const ids = await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, at, ["u1", "u1", "u2", "u1"]), at, true);
    const result = await claim({ now: at });
    expect(
      of(destination, result.deliveries)
        .map((d) => d.id)
        .sort(),
    ).toEqual([ids[0], ids[2]].sort());
  });

  test("holds back a destination backing off, and takes exactly one probe of an open circuit", async () => {
    const source = await seedSource(db.pool);
    const at = hours(5);
    const backing = await seedDestination(db.pool, source, at);
    const open = await seedDestination(db.pool, source, at);
    for (const destination of [backing, open]) {
      await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, at, ["1", "2", "3"]), at);
    }
    await db.pool.query("INSERT INTO destination_health (destination_id, backoff_until, updated_at) VALUES ($1, $2, $3)", [
      backing,
      new Date(at.getTime() + 60_000),
      at,
    ]);
    await db.pool.query(
      "INSERT INTO destination_health (destination_id, state, opened_at, cooldown_ms, probe_at, updated_at) VALUES ($1, 'open', $2, 1000, $2, $2)",
      [open, at],
    );
    const result = await claim({ now: at });
    expect(of(backing, result.deliveries)).toHaveLength(0);
    const probes = result.deliveries.filter((d) => d.destinationId === open);
    expect(probes).toHaveLength(1);
    expect(probes[0]!.probe).toBe(true);
    const health = await db.pool.query("SELECT state, probe_delivery_id FROM destination_health WHERE destination_id = $1", [open]);
    expect(health.rows[0]).toEqual({ state: "half_open", probe_delivery_id: probes[0]!.id });
    // The probe is in flight: no second one.
    expect(of(open, (await claim({ now: at })).deliveries)).toHaveLength(0);
  });

  test("a retry due later is claimed once due, and a lease that runs out makes its delivery due again", async () => {
    const source = await seedSource(db.pool);
    const at = hours(6);
    const destination = await seedDestination(db.pool, source, at);
    const [id] = await seedDeliveries(
      db.pool,
      destination,
      await seedMessages(db.pool, source, at, ["x"]),
      new Date(at.getTime() + 60_000),
    );
    expect(of(destination, (await claim({ now: at })).deliveries)).toEqual([]);
    const taken = of(destination, (await claim({ now: new Date(at.getTime() + 60_000), leaseMs: 10_000 })).deliveries);
    expect(taken.map((d) => d.id)).toEqual([id]);
    expect(of(destination, (await claim({ now: new Date(at.getTime() + 65_000) })).deliveries)).toEqual([]);
    const again = of(destination, (await claim({ now: new Date(at.getTime() + 70_001) })).deliveries);
    expect(again.map((d) => [d.id, d.leaseToken])).toEqual([[id, 2]]);
  });
});
