import { afterAll, beforeAll, expect, test } from "vitest";
import { growProfiles, mergeProfiles } from "../../src/db/queries/identity/identity-graph.js";
import type { Pool } from "../../src/db/pool.js";
import { type OpenTestDatabase, openTestDatabase } from "../helpers/database.js";

// A page's merges in four statements (mergeProfiles): a chain within the
// page (a into b, then b into c) lands everything on the live profile at its
// end, as one merge after another would; and a page's growth leaves a
// profile's traits alone when its calls set none.

let db: OpenTestDatabase;
let pool: Pool;
beforeAll(async () => {
  db = await openTestDatabase();
  ({ pool } = db);
});
afterAll(async () => {
  await db?.close();
});

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const trait = (value: string, at: string) => ({ value, at, messageId: `m-${value}` });
const profilesSql = `SELECT p.id, p.merged_into, f.calls, f.first_seen, f.last_seen, p.traits, f.event_counts
                       FROM profiles p JOIN profile_figures f ON f.profile_id = p.id`;

async function profile(n: number, day: number, figures: { calls: number; traits: object; counts: object }, identifiers: string[]) {
  const at = new Date(Date.UTC(2026, 0, day));
  await pool.query("INSERT INTO profiles (id, created_at, traits) VALUES ($1, $2, $3)", [id(n), at, JSON.stringify(figures.traits)]);
  await pool.query("INSERT INTO profile_figures (profile_id, first_seen, last_seen, calls, event_counts) VALUES ($1, $2, $2, $3, $4)", [
    id(n),
    at,
    figures.calls,
    JSON.stringify(figures.counts),
  ]);
  for (const value of identifiers) {
    await pool.query("INSERT INTO profile_identifiers (type, value, profile_id, first_seen) VALUES ('anonymous_id', $1, $2, $3)", [
      value,
      id(n),
      at,
    ]);
  }
}

test("a chain of merges in one page lands on its last profile, with every identifier, figure, trait and count", async () => {
  await profile(3, 1, { calls: 1, traits: { plan: trait("free", "2026-01-01T00:00:00.000Z") }, counts: { a: 1 } }, ["c-1"]);
  await profile(2, 2, { calls: 2, traits: { plan: trait("pro", "2026-01-05T00:00:00.000Z") }, counts: { a: 2, b: 1 } }, ["b-1"]);
  await profile(1, 3, { calls: 4, traits: { name: trait("Ada", "2026-01-03T00:00:00.000Z") }, counts: { b: 5 } }, ["a-1", "a-2"]);
  await profile(4, 4, { calls: 1, traits: {}, counts: {} }, []);
  // Profile 4 was merged into 1 by an earlier page: it follows 1 to the end of the chain.
  await pool.query("UPDATE profiles SET merged_into = $1 WHERE id = $2", [id(1), id(4)]);

  await mergeProfiles(pool, [
    { from: id(1), into: id(2) },
    { from: id(2), into: id(3) },
  ]);

  const { rows } = await pool.query(`${profilesSql} ORDER BY id`);
  expect(rows.map((row) => [row.id, row.merged_into])).toEqual([
    [id(1), id(3)],
    [id(2), id(3)],
    [id(3), null],
    [id(4), id(3)],
  ]);
  const live = rows.find((row) => row.id === id(3));
  expect(Number(live.calls)).toBe(7);
  expect(live.first_seen).toEqual(new Date(Date.UTC(2026, 0, 1)));
  expect(live.last_seen).toEqual(new Date(Date.UTC(2026, 0, 3)));
  expect(live.traits).toEqual({ plan: trait("pro", "2026-01-05T00:00:00.000Z"), name: trait("Ada", "2026-01-03T00:00:00.000Z") });
  expect(live.event_counts).toEqual({ a: 3, b: 6 });
  const { rows: identifiers } = await pool.query("SELECT value, profile_id FROM profile_identifiers ORDER BY value");
  expect(identifiers.map((row) => [row.value, row.profile_id])).toEqual([
    ["a-1", id(3)],
    ["a-2", id(3)],
    ["b-1", id(3)],
    ["c-1", id(3)],
  ]);

  // A page's growth: traits kept as they are when its calls set none, counts added key by key.
  await growProfiles(pool, [
    {
      id: id(3),
      calls: 2,
      firstSeen: new Date(Date.UTC(2026, 0, 9)),
      lastSeen: new Date(Date.UTC(2026, 0, 9)),
      traits: {},
      counts: { b: 1, c: 2 },
    },
  ]);
  const { rows: grown } = await pool.query(`${profilesSql} WHERE p.id = $1`, [id(3)]);
  expect(grown[0]).toMatchObject({ calls: "9", traits: live.traits, event_counts: { a: 3, b: 7, c: 2 } });
  expect(grown[0].last_seen).toEqual(new Date(Date.UTC(2026, 0, 9)));

  // A page whose calls set traits: the latest value per key wins, the rest kept.
  await growProfiles(pool, [
    {
      id: id(3),
      calls: 1,
      firstSeen: new Date(Date.UTC(2026, 0, 10)),
      lastSeen: new Date(Date.UTC(2026, 0, 10)),
      traits: { plan: trait("team", "2026-01-10T00:00:00.000Z") },
      counts: { "(identify)": 1 },
    },
  ]);
  const { rows: identified } = await pool.query(`${profilesSql} WHERE p.id = $1`, [id(3)]);
  expect(identified[0]).toMatchObject({
    calls: "10",
    traits: { plan: trait("team", "2026-01-10T00:00:00.000Z"), name: trait("Ada", "2026-01-03T00:00:00.000Z") },
    event_counts: { a: 3, b: 7, c: 2, "(identify)": 1 },
  });
});
