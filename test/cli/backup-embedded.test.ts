import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect } from "vitest";
import { launchService, serviceEnv, entry, type ServiceProcess } from "../helpers/process.js";
import { testWith } from "../helpers/fixtures.js";
import { testAdminToken } from "../helpers/server.js";
import { cliEnv, waypost } from "./support.js";

// Backup and restore with the embedded Postgres: no DATABASE_URL, only the
// data directory. Restored into a new data directory (the CLI starts its
// Postgres, creating the cluster), served by a Waypost started there, and
// backed up again while that Waypost runs.

let service: ServiceProcess | undefined;

const test = testWith();
test.beforeAll(async ({ server }) => {
  const source = await server.createSource("web");
  await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Paid" } });
});
afterAll(async () => {
  if (service?.child.exitCode === null) service.child.kill("SIGKILL");
});

test("restore into a new data directory's embedded Postgres, serve it, and back it up while it runs", async ({ server }) => {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-backup-embedded-"));
  const file = path.join(dir, "from-url.backup");
  const backup = await waypost(["backup", file], cliEnv(undefined, { DATABASE_URL: server.database.url }));
  expect(backup.code, backup.stderr).toBe(0);

  const dataDir = path.join(dir, "data");
  const embeddedEnv = cliEnv(undefined, { WAYPOST_DATA_DIR: dataDir, DATABASE_URL: undefined });
  const restore = await waypost(["restore", file], embeddedEnv);
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toMatch(/^restored \d+ rows of \d+ tables from /m);

  service = await launchService(process.execPath, [entry], serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir }));
  const listed = await waypost(["sources", "list", "--url", service.url, "--token", testAdminToken], embeddedEnv);
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout).toMatch(/^\S+\s+web\s+sdk\s/m);

  // Online, from the running Waypost's own Postgres: found through the data directory.
  const again = await waypost(["backup", path.join(dir, "embedded.backup")], embeddedEnv);
  expect(again.code, again.stderr).toBe(0);
  expect(again.stdout).toMatch(/^backed up \d+ rows of \d+ tables to /m);
  // A restore over the running service's rows is refused, naming them.
  const refused = await waypost(["restore", file], embeddedEnv);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("sources (1 row)");

  service.child.kill("SIGTERM");
  expect(await service.exited).toBe(0);
});
