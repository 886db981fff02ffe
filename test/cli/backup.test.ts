import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer } from "../helpers/server.js";
import { createTestDatabase, type TestDatabase, withClient } from "../helpers/database.js";
import { cliEnv, waypost } from "./support.js";

// `waypost backup FILE` of a running Waypost's database, and `waypost
// restore FILE` into a new one that a Waypost then serves.

let dir: string;
let writeKey: string;
const databases: TestDatabase[] = [];

const test = testWith();
test.beforeAll(async ({ server, receiver }) => {
  dir = mkdtempSync(path.join(tmpdir(), "waypost-backup-"));
  const source = await server.createSource("web");
  writeKey = source.writeKey;
  await server.createDestination({ name: "hooks", sourceIds: [source.id], sharedSecret: "s3cret", webhooks: [{ url: receiver.url }] });
  const delivered = server.waitForDeliveries(3);
  const tracking = server.tracking(writeKey);
  for (const n of [1, 2, 3]) await tracking.track({ track: { userId: `u${n}`, event: "Paid", properties: { n, note: 'a\nb \\ "c"' } } });
  await delivered;
});
afterAll(async () => {
  for (const database of databases) await database.drop();
});

async function emptyDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase({ migrated: false });
  databases.push(database);
  return database;
}

/** Every table's rows (as JSON text, sorted) and every sequence's position: what a restore must give back. */
async function contents(url: string): Promise<Record<string, string[]>> {
  return withClient(url, async (client) => {
    const tables = await client.query<{ name: string; kind: string }>(
      `SELECT relname AS name, relkind AS kind FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p', 'S') AND NOT relispartition AND relname <> 'migrations'`,
    );
    const all: Record<string, string[]> = {};
    for (const { name, kind } of tables.rows) {
      const query =
        kind === "S"
          ? `SELECT last_value::text || ' ' || is_called AS row FROM "${name}"`
          : `SELECT row_to_json(t)::text AS row FROM "${name}" t`;
      all[name] = (await client.query<{ row: string }>(query)).rows.map((r) => r.row).sort();
    }
    return all;
  });
}

test("a backup of a running Waypost restores into an empty database, row for row, and a Waypost serves it", async ({ server }) => {
  const file = path.join(dir, "waypost.backup");
  const backup = await waypost(["backup", file], cliEnv(undefined, { DATABASE_URL: server.database.url }));
  expect(backup.code, backup.stderr).toBe(0);
  expect(backup.stdout).toMatch(/^backed up \d+ rows of \d+ tables to .*waypost\.backup \(\d+ bytes\)$/m);
  const target = await emptyDatabase();
  const restore = await waypost(["restore", file], cliEnv(undefined, { DATABASE_URL: target.url }));
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toMatch(/^restored \d+ rows of \d+ tables from /m);

  const [before, after] = await Promise.all([contents(server.database.url), contents(target.url)]);
  expect(before.messages).toHaveLength(3);
  expect(before.delivery_history).toHaveLength(3);
  expect(after).toEqual(before);

  // The restored installation serves: its sources, and the old write key works.
  const restored = await startTestServer({ database: target });
  try {
    const { sources } = await restored.sources.listSources({});
    expect(sources.map((s) => s.name)).toEqual(["web"]);
    const tracked = await restored.tracking(writeKey).track({ track: { userId: "u4", event: "Paid" } });
    expect(tracked).toBeDefined();
  } finally {
    await restored.stopService();
  }
});

test("restore refuses a database with rows, naming them, unless --force; a cut-off file restores nothing", async ({ server }) => {
  const file = path.join(dir, "again.backup");
  const env = cliEnv(undefined, { DATABASE_URL: server.database.url });
  expect((await waypost(["backup", file], env)).code).toBe(0);
  // A backup never overwrites a file.
  const exists = await waypost(["backup", file], env);
  expect(exists.code).toBe(2);
  expect(exists.stderr).toContain("exists");

  const target = await emptyDatabase();
  const targetEnv = cliEnv(undefined, { DATABASE_URL: target.url });
  expect((await waypost(["restore", file], targetEnv)).code).toBe(0);
  const refused = await waypost(["restore", file], targetEnv);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/the database is not empty: it holds .*sources \(1 row\).*messages \(3 rows\)/);
  expect(refused.stderr).toContain("--force");
  const forced = await waypost(["restore", file, "--force"], targetEnv);
  expect(forced.code, forced.stderr).toBe(0);
  expect(forced.stdout).toMatch(/\(replacing \d+ rows\)/);
  expect(await contents(target.url)).toEqual(await contents(server.database.url));

  // The same backup without its last lines: refused whole, no rows written.
  const lines = gunzipSync(readFileSync(file)).toString().split("\n");
  const cut = path.join(dir, "cut.backup");
  writeFileSync(cut, gzipSync(lines.slice(0, -3).join("\n")));
  const fresh = await emptyDatabase();
  const truncated = await waypost(["restore", cut], cliEnv(undefined, { DATABASE_URL: fresh.url }));
  expect(truncated.code).toBe(1);
  expect(truncated.stderr).toContain("ends early: it is not a whole backup");
  const counts = await contents(fresh.url);
  expect(Object.entries(counts).filter(([name, rows]) => !name.endsWith("_seq") && name !== "delivery_ids" && rows.length > 0)).toEqual([]);

  const notBackup = path.join(dir, "not-a-backup");
  writeFileSync(notBackup, gzipSync("hello\n"));
  const wrong = await waypost(["restore", notBackup], cliEnv(undefined, { DATABASE_URL: fresh.url }));
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain("is not a Waypost backup");
});
