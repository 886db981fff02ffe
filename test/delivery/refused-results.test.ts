import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf, ManualClock } from "../helpers/server.js";

// The retry delay after a refused result is the retry schedule's first delay.
const retryDelayMs = 10_000;
const clock = new ManualClock(new Date("2026-11-01T00:00:00Z"));

const test = testWith({ server: { clock } });
test.afterAll(async ({ server }) => {
  await server.pool.query("DROP TRIGGER IF EXISTS refuse_attempts ON delivery_attempts").catch(() => {});
});

test("a result the database refuses (a trigger on one URL's attempt rows) is sent three times at most, then the delivery fails with the database's error", async ({
  server,
  receiver: refused,
}) => {
  await server.pool.query(`
    CREATE FUNCTION refuse_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.url = '${refused.url}' THEN RAISE EXCEPTION 'attempt rows for this URL are refused by the test'; END IF;
      RETURN NEW;
    END $$`);
  await server.pool.query(
    "CREATE TRIGGER refuse_attempts BEFORE INSERT ON delivery_attempts FOR EACH ROW EXECUTE FUNCTION refuse_attempts()",
  );
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "refused", sourceIds: [source.id], webhooks: [{ url: refused.url }] });
  const { messageId } = await server.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } });
  const loop = server.waypost.delivery!;
  const state = async () =>
    (
      await server.pool.query(
        `SELECT d.status, d.attempt_count, d.refused_completions, d.last_error, d.leased_until, d.run_at
           FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1`,
        [messageId],
      )
    ).rows[0];

  for (let round = 1; round <= 3; round++) {
    const completed = completionsOf(server, destination.id, 1);
    if (round > 1) {
      clock.advance(retryDelayMs);
      loop.poke();
    }
    await refused.waitForRequests(round);
    const [completion] = await completed;
    const row = await state();
    expect(row.refused_completions).toBe(round);
    expect(row.last_error).toContain("attempt rows for this URL are refused by the test");
    // No attempt row could be written; the lease is over either way.
    expect(row.attempt_count).toBe(0);
    expect(row.leased_until).toBeNull();
    if (round < 3) {
      expect([completion!.status, row.status]).toEqual(["pending", "pending"]);
      expect(row.run_at).toEqual(new Date(clock.now().getTime() + retryDelayMs));
    } else {
      expect([completion!.status, row.status]).toEqual(["failed", "failed"]);
    }
  }

  // Failed, it is not claimed again however long the clock runs on.
  clock.advance(24 * 60 * 60_000);
  const claimed = new Promise<number>((resolve) => loop.events.once("claimed", (c) => resolve(c.count)));
  loop.poke();
  expect(await claimed).toBe(0);
  expect(refused.requests).toHaveLength(3);
});
