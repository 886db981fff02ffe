import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();
let warehouse: TestDatabase;
let dir: string;

test.beforeAll(async () => {
  warehouse = await createTestDatabase({ migrated: false });
  dir = mkdtempSync(path.join(tmpdir(), "waypost-tls-"));
});
afterAll(async () => {
  await warehouse?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function refusal(server: TestServer, postgres: { url: string; schema?: string }): Promise<ConnectError> {
  const error = await server.destinations
    .createDestination({ destination: { name: "wh", kind: DestinationKind.POSTGRES, postgres } })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConnectError);
  expect((error as ConnectError).code).toBe(Code.InvalidArgument);
  return error as ConnectError;
}

const withParam = (url: string, name: string, value: string) => {
  const u = new URL(url);
  u.searchParams.set(name, value);
  return u.toString();
};

test("Waypost's own database is refused as a warehouse, whatever its URL looks like", async ({ server }) => {
  const own = new URL(server.database.url);
  const error = await refusal(server, { url: own.toString(), schema: "public" });
  expect(error.message).toContain("destination.postgres.url: is Waypost's own database");
  // The same database under another spelling (localhost for 127.0.0.1, another schema) is still it.
  const respelled = new URL(own);
  respelled.hostname = respelled.hostname === "127.0.0.1" ? "localhost" : respelled.hostname;
  const again = await refusal(server, { url: respelled.toString(), schema: "analytics" });
  expect(again.message).toContain("is Waypost's own database");
});

test("a schema holding tables Waypost did not make is refused; a new or empty one is fine", async ({ server }) => {
  const client = new pg.Client({ connectionString: warehouse.url });
  await client.connect();
  try {
    await client.query("CREATE SCHEMA crm; CREATE TABLE crm.customers (id int); CREATE SCHEMA empty");
    const error = await refusal(server, { url: warehouse.url, schema: "crm" });
    expect(error.message).toContain('destination.postgres.schema: schema "crm" holds tables Waypost did not make (customers)');
    for (const schema of ["empty", "brand_new"]) {
      const created = await server.destinations.createDestination({
        destination: { name: `wh-${schema}`, kind: DestinationKind.POSTGRES, postgres: { url: warehouse.url, schema } },
      });
      expect(created.destination?.postgres?.schema).toBe(schema);
    }
    // Updating a destination to point at the user's schema is refused the same way.
    const { destination } = await server.destinations.createDestination({
      destination: { name: "wh-move", kind: DestinationKind.POSTGRES, postgres: { url: warehouse.url, schema: "elsewhere" } },
    });
    const moved = await server.destinations
      .updateDestination({
        destination: { id: destination!.id, postgres: { url: "", schema: "crm" } },
        updateMask: { paths: ["postgres"] },
      })
      .catch((e: unknown) => e);
    expect((moved as ConnectError).code).toBe(Code.InvalidArgument);
    expect((moved as ConnectError).message).toContain("destination.postgres.schema");
  } finally {
    await client.end();
  }
});

test("URL parameters are an allow-list: TLS files (a FIFO, /dev/zero) and unknown ones are refused at once, without touching the file", async ({
  server,
}) => {
  const fifo = path.join(dir, "ca.fifo");
  execFileSync("mkfifo", [fifo]);
  const started = performance.now();
  const messages: string[] = [];
  for (const [name, value] of [
    ["sslrootcert", fifo],
    ["sslrootcert", "/dev/zero"],
    ["sslrootcert", path.join(dir, "missing.pem")],
    ["sslcert", "/etc/passwd"],
    ["sslkey", "/dev/zero"],
    ["host", "/var/run/postgresql"],
    ["options", "-c search_path=public"],
  ] as const) {
    const error = await refusal(server, { url: withParam(warehouse.url, name, value), schema: "tls" });
    expect(error.message).toContain(`destination.postgres.url: parameter "${name}" is not allowed`);
    messages.push(error.message.replace(name, "NAME"));
  }
  // The answer says nothing about which files exist: it names the parameter only.
  for (const message of messages) expect(message).not.toContain(dir);
  expect(new Set(messages.slice(0, 3)).size).toBe(1);
  // A refused FIFO would otherwise block until a writer comes (minutes): answered at once.
  expect(performance.now() - started).toBeLessThan(30_000);
  const badMode = await refusal(server, { url: withParam(warehouse.url, "sslmode", "bogus"), schema: "tls" });
  expect(badMode.message).toContain('parameter "sslmode" must be one of');
  const fine = await server.destinations.createDestination({
    destination: {
      name: "wh-tls",
      kind: DestinationKind.POSTGRES,
      postgres: { url: withParam(warehouse.url, "sslmode", "disable"), schema: "tls" },
    },
  });
  expect(fine.destination?.postgres?.url).toContain("sslmode=disable");
});

test("a warehouse that does not answer at save is accepted (the loader checks before it loads)", async ({ server }) => {
  const created = await server.destinations.createDestination({
    destination: {
      name: "wh-down",
      kind: DestinationKind.POSTGRES,
      postgres: { url: "postgres://loader:pw@127.0.0.1:1/analytics", schema: "x" },
    },
  });
  expect(created.destination?.postgres?.hasPostgresUrl).toBe(true);
});
