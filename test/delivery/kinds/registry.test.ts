import type { MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "vitest";
import { type Destination, DestinationKind, type DestinationSchema } from "../../../gen/waypost/v1/destination_pb.js";
import { kindDescriptors, type KindName } from "../../../src/delivery/kinds/descriptors.js";
import { kindOfProto, registeredKinds } from "../../../src/delivery/kinds/registry.js";
import { routingColumns } from "../../../src/db/queries/destinations.js";
import { createTestDatabase, type TestDatabase } from "../../helpers/database.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";

let warehouse: TestDatabase;
let sourceId = "";

const test = testWith({ server: { config: { role: "api" } } });
test.beforeAll(async ({ server }) => {
  warehouse = await createTestDatabase({ migrated: false });
  sourceId = (await server.createSource()).id;
});
// The server stops before its destinations' warehouse is dropped.
test.afterAll(async ({ server }) => {
  await server.stop();
  await warehouse?.drop();
});

test("every kind the API names has a registered kind, and the clients' list names the same kinds in the same order", () => {
  const values = Object.values(DestinationKind).filter((v): v is DestinationKind => typeof v === "number");
  expect(values.length).toBeGreaterThan(2);
  for (const value of values) {
    if (value === DestinationKind.UNSPECIFIED) continue;
    expect(kindOfProto(value)?.proto, `DESTINATION_KIND_${DestinationKind[value]} has no registered kind`).toBe(value);
  }
  expect(registeredKinds.map((k) => [k.name, k.proto])).toEqual(kindDescriptors.map((k) => [k.name, k.proto]));
});

/** A write-only secret of a kind: set on create, masked in answers, kept when an update sends the masked value back. */
interface Sample {
  /** Settings with a secret in them. */
  create(): MessageInitShape<typeof DestinationSchema>;
  /** The secret as sent. */
  secret(): string;
  /** The secret as stored now. */
  stored(server: TestServer, id: string): Promise<string>;
}

// Keyed by kind: a kind without a sample does not compile.
const samples: Record<KindName, Sample> = {
  webhook: {
    create: () => ({ webhooks: [{ url: "https://hooks.example.com/in", headers: { Authorization: "Bearer hook-secret-1" } }] }),
    secret: () => "Bearer hook-secret-1",
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT webhooks FROM destinations WHERE id = $1", [id]);
      return rows[0].webhooks[0].headers.Authorization;
    },
  },
  postgres: {
    create: () => ({ postgres: { url: warehouseUrl(), schema: "kinds" } }),
    secret: () => warehouseUrl(),
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT postgres FROM destinations WHERE id = $1", [id]);
      return rows[0].postgres.url;
    },
  },
  amqp: {
    create: () => ({ amqp: { url: "amqp://waypost:amqp-secret-pw@broker.example.com:5672/events", exchange: "events" } }),
    secret: () => "amqp://waypost:amqp-secret-pw@broker.example.com:5672/events",
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT amqp FROM destinations WHERE id = $1", [id]);
      return rows[0].amqp.url;
    },
  },
  nats: {
    create: () => ({ nats: { servers: ["nats://nats.example.com:4222"], token: "nats-secret-token" } }),
    secret: () => "nats-secret-token",
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT nats FROM destinations WHERE id = $1", [id]);
      return rows[0].nats.token;
    },
  },
  integration: {
    create: () => ({ integration: { slug: "mixpanel", settings: { projectToken: "mp-token", apiSecret: "mixpanel-secret-1" } } }),
    secret: () => "mixpanel-secret-1",
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT integration FROM destinations WHERE id = $1", [id]);
      return rows[0].integration.settings.apiSecret;
    },
  },
  lake: {
    create: () => ({
      lake: {
        url: "s3://lake-bucket/events",
        endpoint: "https://s3.example.com",
        accessKeyId: "AKIDLAKE",
        secretAccessKey: "lake-secret-key-1",
      },
    }),
    secret: () => "lake-secret-key-1",
    async stored(server, id) {
      const { rows } = await server.pool.query("SELECT lake FROM destinations WHERE id = $1", [id]);
      return rows[0].lake.secretAccessKey;
    },
  },
};

/** The warehouse's URL with a password (the embedded Postgres's own, or one a trusting server ignores). */
function warehouseUrl(): string {
  const url = new URL(warehouse.url);
  if (url.password === "") url.password = "kind-secret-pw";
  return url.toString();
}

const kindPaths = (kind: (typeof registeredKinds)[number]) => kind.settings.fields.map((f) => f.path);

for (const kind of registeredKinds) {
  test(`${kind.name}: settings round-trip over the RPC, the secret masked and kept when sent back masked`, async ({ server }) => {
    const sample = samples[kind.name];
    const created = await server.createDestination({
      name: `kind-${kind.name}`,
      sourceIds: [sourceId],
      kind: kind.proto,
      ...sample.create(),
    });
    expect(created.kind).toBe(kind.proto);
    const { destination: got } = await server.destinations.getDestination({ id: created.id });
    const shown = JSON.stringify(got, (_, v) => (typeof v === "bigint" ? String(v) : v));
    expect(shown).not.toContain(sample.secret());
    expect(await sample.stored(server, created.id)).toBe(sample.secret());
    // Send back what Get showed (masked), renamed: the stored secret stays.
    const { destination: updated } = await server.destinations.updateDestination({
      destination: { ...(got as Destination), name: `kind-${kind.name}-renamed` },
      updateMask: { paths: ["name", ...kindPaths(kind)] },
    });
    expect(updated?.name).toBe(`kind-${kind.name}-renamed`);
    expect(updated?.etag).not.toBe(got?.etag);
    expect(await sample.stored(server, created.id)).toBe(sample.secret());
    expect(JSON.stringify(updated, (_, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(sample.secret());
  });
}

test("a kind's settings on a destination of another kind are refused, naming the field", async ({ server }) => {
  for (const kind of registeredKinds) {
    const other = registeredKinds.find((k) => k !== kind)!;
    const error = await server.destinations
      .createDestination({
        destination: Object.assign(
          { name: "mixed", sourceIds: [sourceId], kind: kind.proto },
          samples[kind.name].create(),
          samples[other.name].create(),
        ),
      })
      .catch((e: Error) => e);
    expect(String(error)).toMatch(
      new RegExp(`invalid_argument\\] destination\\.${other.settings.fields[0]!.name}: a ${kind.label} destination has no`),
    );
  }
});

test("each routing column is one kind's, which stores its settings there: a set routing column says the kind", async ({ server }) => {
  const routing = registeredKinds.filter((kind) => kind.routing);
  expect(routing.map((kind) => kind.routing!.column).sort()).toEqual([...routingColumns].sort());
  for (const kind of routing) {
    const created = await server.createDestination({
      name: `routes-${kind.name}`,
      sourceIds: [sourceId],
      kind: kind.proto,
      ...samples[kind.name].create(),
    });
    const column = kind.routing!.column;
    const { rows } = await server.pool.query(
      `SELECT kind, ${column} IS NOT NULL AS set FROM destinations WHERE ${column} IS NOT NULL OR id = $1`,
      [created.id],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toEqual({ kind: kind.name, set: true });
  }
});
