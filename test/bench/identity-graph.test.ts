// The identity scenario (bench/scenarios/identity.mjs) measures the resolver
// on a graph it writes with SQL (bench/lib/identity-graph.mjs), not through
// the resolver, and loads it with calls whose identifiers it writes into a
// template's bytes (bench/lib/identity-load.mjs). These check, on a small
// graph, that the graph is one the resolver reads as its own (the load's
// known identifiers land on the stored profiles, its logins merge stored
// profiles), that the tables keep their keys and indexes, and that the
// prepared database is reused and copied, so a schema or format change that
// breaks the bench fails here, not in a bench run.
import type pg from "pg";
import { expect, test } from "vitest";
import { createTestDatabase, serverUrl, withClient } from "../helpers/database.js";
import { startTestServer } from "../helpers/server.js";

interface Shape {
  identifiers: number;
  users: number;
  anonymousOnly: number;
  profiles: number;
}
// bench/ is plain JavaScript (type-checked by bench/tsconfig.json); the imports are typed here.
interface GraphModule {
  fillIdentityGraph(client: pg.ClientBase, identifiers: number): Promise<Shape>;
  preparedIdentityDatabase(
    serverUrl: string,
    options: { identifiers: number; name?: string },
  ): Promise<{ name: string; shape: Shape; reused: boolean; build_s: number }>;
  copyOfDatabase(serverUrl: string, template: string): Promise<{ url: string; drop(): Promise<unknown> }>;
}
interface LoadModule {
  identityClient(baseUrl: string, writeKey: string, shape: Shape): { sendBatch(): Promise<unknown>; close(): void };
  batchSize: number;
  batchMix: Record<string, number>;
  visitorsPerBatch: number;
}
const bench = (file: string) => new URL(`../../bench/${file}`, import.meta.url).href;

const indexDefinitions = async (client: pg.ClientBase) =>
  (
    await client.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE tablename IN ('profiles', 'profile_identifiers') ORDER BY indexname",
    )
  ).rows.map((row) => row.indexdef);

test("bench/lib/identity-graph.mjs and identity-load.mjs: the stored graph is the resolver's own, and the load's calls resolve into it", async () => {
  const { fillIdentityGraph } = (await import(bench("lib/identity-graph.mjs"))) as GraphModule;
  const { identityClient, batchSize, batchMix, visitorsPerBatch } = (await import(bench("lib/identity-load.mjs"))) as LoadModule;
  const database = await createTestDatabase();
  try {
    const shape = await withClient(database.url, async (client) => {
      const before = await indexDefinitions(client);
      const filled = await fillIdentityGraph(client, 1_000);
      expect(await indexDefinitions(client)).toEqual(before);
      const { rows } = await client.query(
        `SELECT (SELECT count(*) FROM profiles)::int AS profiles, (SELECT count(*) FROM profile_identifiers)::int AS identifiers,
                (SELECT count(DISTINCT profile_id) FROM profile_identifiers)::int AS holders,
                (SELECT count(*) FROM profile_identifiers i LEFT JOIN profiles p ON p.id = i.profile_id WHERE p.id IS NULL)::int AS orphans`,
      );
      expect(rows[0]).toEqual({ profiles: filled.profiles, identifiers: 1_000, holders: filled.profiles, orphans: 0 });
      return filled;
    });
    expect(shape).toEqual({ identifiers: 1_000, users: 400, anonymousOnly: 200, profiles: 600 });

    const server = await startTestServer({ database, config: { role: "all" } });
    try {
      const source = await server.createSource("identity");
      const client = identityClient(server.url, source.writeKey, shape);
      const batches = 4;
      for (let n = 0; n < batches; n++) await client.sendBatch();
      client.close();
      await server.waypost.identity!.caughtUp();
      const calls = batches * batchSize;
      const { rows } = await server.pool.query(
        `SELECT (SELECT count(*) FROM messages WHERE source_id = $1)::int AS stored,
                (SELECT count(*) FROM profile_calls)::int AS resolved,
                (SELECT count(*) FROM profile_identifiers)::int AS identifiers,
                (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL)::int AS merged,
                -- A known user's calls land on the profile stored for them (users are the older profiles: they survive merges).
                (SELECT count(*) FROM profile_calls pc JOIN messages m ON m.id = pc.message_pk
                  WHERE m.user_id LIKE 'u%' AND pc.profile_id = lpad(to_hex(substr(m.user_id, 2)::int), 32, '0')::uuid)::int AS on_stored_user,
                (SELECT count(*) FROM messages WHERE source_id = $1 AND user_id LIKE 'u%')::int AS known_user_calls`,
        [source.id],
      );
      const fresh = visitorsPerBatch + batchMix.signUp! + batchMix.newDevice!;
      expect(rows[0]).toMatchObject({ stored: calls, resolved: calls, identifiers: 1_000 + batches * fresh });
      expect(rows[0].known_user_calls).toBe(batches * (batchMix.known! + batchMix.knownIdentify! + batchMix.login! + batchMix.newDevice!));
      expect(rows[0].on_stored_user).toBe(rows[0].known_user_calls);
      // Logins merge a stored anonymous-only profile into a stored user's (one pick may repeat another).
      expect(rows[0].merged).toBeGreaterThan(0);
      expect(rows[0].merged).toBeLessThanOrEqual(batches * batchMix.login!);
    } finally {
      await server.stop();
    }
  } finally {
    await database.drop();
  }
});

test("bench/lib/identity-graph.mjs: the prepared database is built once, then reused and copied", async () => {
  const { preparedIdentityDatabase, copyOfDatabase } = (await import(bench("lib/identity-graph.mjs"))) as GraphModule;
  const name = `waypost_test_identity_${Math.random().toString(16).slice(2, 10)}`;
  const dropPrepared = () => withClient(serverUrl(), (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  try {
    const built = await preparedIdentityDatabase(serverUrl(), { identifiers: 500, name });
    expect(built).toMatchObject({ name, reused: false, shape: { identifiers: 500, profiles: 300 } });
    expect(await preparedIdentityDatabase(serverUrl(), { identifiers: 500, name })).toMatchObject({ reused: true, build_s: built.build_s });
    const copy = await copyOfDatabase(serverUrl(), name);
    try {
      const { rows } = await withClient(copy.url, (client) => client.query("SELECT count(*)::int AS n FROM profile_identifiers"));
      expect(rows[0].n).toBe(500);
    } finally {
      await copy.drop();
    }
    // Another count: built again.
    expect(await preparedIdentityDatabase(serverUrl(), { identifiers: 600, name })).toMatchObject({
      reused: false,
      shape: { profiles: 360 },
    });
  } finally {
    await dropPrepared();
  }
});
