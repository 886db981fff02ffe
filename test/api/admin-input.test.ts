import { PassThrough } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let logs = "";
const logStream = new PassThrough().on("data", (chunk: Buffer) => (logs += chunk.toString()));
const test = testWith({ server: { config: { delivery: { allowPrivateDestinations: false } }, logStream } });
let sourceId: string;

test.beforeAll(async ({ server: strict }) => {
  sourceId = (await strict.createSource()).id;
});

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

const create = (server: TestServer, url: string) =>
  server.destinations.createDestination({ destination: { name: `d ${url}`, sourceIds: [sourceId], webhooks: [{ url }] } });

describe("webhook URLs", () => {
  const literalPrivate = [
    "http://127.0.0.1:8080/hook",
    "http://127.1.2.3/",
    "http://localhost:9000/",
    "http://api.localhost/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://10.0.0.5/",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://0.0.0.0/",
    "http://2130706433/", // 127.0.0.1 as one number
    "http://0x7f.1/",
  ];

  test.for(literalPrivate)("%s is refused at create, naming WAYPOST_ALLOW_PRIVATE_DESTINATIONS", async (url, { server: strict }) => {
    const error = await failure(create(strict, url));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("destination.webhooks[0].url");
    expect(error.rawMessage).toContain("WAYPOST_ALLOW_PRIVATE_DESTINATIONS");
  });

  test("public addresses and host names are accepted; an update to a private address is refused", async ({ server: strict }) => {
    const destination = (await create(strict, "https://93.184.216.34/hook")).destination!;
    await create(strict, "https://hooks.example.com/in");
    const error = await failure(
      strict.destinations.updateDestination({
        destination: { id: destination.id, webhooks: [{ url: "http://10.1.1.1/" }] },
        updateMask: { paths: ["webhooks"] },
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("WAYPOST_ALLOW_PRIVATE_DESTINATIONS");
  });

  test("a user name or password in the URL is refused, even where private addresses are allowed", async ({ server: strict }) => {
    const lenient = await startTestServer({ database: strict.database });
    try {
      for (const url of ["http://user:secret@hooks.example.com/", "https://token@hooks.example.com/"]) {
        const error = await failure(create(lenient, url));
        expect(error.code).toBe(Code.InvalidArgument);
        expect(error.rawMessage).toContain("user name or password");
        expect(error.rawMessage).not.toContain("secret");
      }
      // The loopback receivers the other tests use stay allowed there.
      expect((await create(lenient, "http://127.0.0.1:9/")).destination?.id).toBeTruthy();
    } finally {
      await lenient.stopService();
    }
  });

  test("allowed CIDR ranges let their literal addresses (and localhost, for loopback) through", async ({ server: strict }) => {
    const ranged = await startTestServer({
      database: strict.database,
      config: { delivery: { allowPrivateDestinations: false, allowedCidrs: ["127.0.0.0/8"] } },
    });
    try {
      expect((await create(ranged, "http://127.0.0.1:9/")).destination?.id).toBeTruthy();
      expect((await create(ranged, "http://localhost:9/")).destination?.id).toBeTruthy();
      expect((await failure(create(ranged, "http://10.0.0.1/"))).code).toBe(Code.InvalidArgument);
    } finally {
      await ranged.stopService();
    }
  });
});

describe("names and secrets must be storable text", () => {
  /** Raw Connect JSON, so a lone surrogate travels as the \ud800 escape. */
  async function adminJson(strict: TestServer, method: string, body: string) {
    const response = await fetch(`${strict.url}/waypost.v1.${method}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${strict.adminToken}` },
      body,
    });
    return { status: response.status, json: (await response.json()) as { code: string; message: string } };
  }

  const cases = [
    ["SourceService/CreateSource", "source.name", (t: string) => `{"source":{"name":"a${t}b"}}`],
    [
      "DestinationService/CreateDestination",
      "destination.name",
      (t: string) => `{"destination":{"name":"a${t}b","sourceIds":["${sourceId}"],"webhooks":[{"url":"https://hooks.example.com/"}]}}`,
    ],
    [
      "DestinationService/CreateDestination",
      "destination.sharedSecret",
      (t: string) =>
        `{"destination":{"name":"ok","sourceIds":["${sourceId}"],"webhooks":[{"url":"https://hooks.example.com/"}],"sharedSecret":"s${t}"}}`,
    ],
    ["AudienceService/CreateAudience", "audience.name", (t: string) => `{"audience":{"sourceId":"${sourceId}","name":"a${t}b"}}`],
  ] as const;

  test.for(cases)("%s: NUL in %s is 400 invalid_argument naming the field", async ([method, field, body], { server: strict }) => {
    const answer = await adminJson(strict, method, body("\\u0000"));
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe("invalid_argument");
    expect(answer.json.message).toMatch(new RegExp(`^${field.replace(".", "\\.")}: must not contain NUL`));
  });

  // Protobuf's JSON reader refuses these first, naming the message field.
  test.for(cases)(
    "%s: a lone surrogate in %s is 400 invalid_argument naming the field",
    async ([method, field, body], { server: strict }) => {
      const answer = await adminJson(strict, method, body("\\ud800"));
      expect(answer.status).toBe(400);
      expect(answer.json.code).toBe("invalid_argument");
      const protoField = field.replace("sharedSecret", "shared_secret").replace(/^(\w)/, (c) => c.toUpperCase());
      expect(answer.json.message).toContain(protoField);
    },
  );
});

describe("delivery filters must be storable text", () => {
  // RetryDeliveries looks its destination up first: the filter must reach the database.
  let destinationId = "";
  test.beforeAll(async ({ server: strict }) => {
    destinationId = (await create(strict, "https://hooks.example.com/filters")).destination!.id;
  });
  const cases = [
    ["DeliveryService/ListDeliveries", "userId", () => `{"userId":"a\\u0000b"}`],
    ["DeliveryService/ListDeliveries", "messageId", () => `{"messageId":"a\\u0000b"}`],
    ["DeliveryService/RetryDeliveries", "userId", (id: string) => `{"destinationId":"${id}","userId":"a\\u0000b"}`],
    ["DeliveryService/RetryDeliveries", "messageId", (id: string) => `{"destinationId":"${id}","messageId":"a\\u0000b"}`],
  ] as const;

  test.for(cases)(
    "%s: NUL in the %s filter is 400 invalid_argument naming the field",
    async ([method, field, body], { server: strict }) => {
      const response = await fetch(`${strict.url}/waypost.v1.${method}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${strict.adminToken}` },
        body: body(destinationId),
      });
      const json = (await response.json()) as { code: string; message: string };
      expect(response.status).toBe(400);
      expect(json.code).toBe("invalid_argument");
      expect(json.message).toBe(`${field}: must not contain NUL characters`);
    },
  );
});

describe("message ids and filter documents must be storable text", () => {
  async function adminJson(strict: TestServer, method: string, body: string) {
    const response = await fetch(`${strict.url}/waypost.v1.${method}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${strict.adminToken}` },
      body,
    });
    return { status: response.status, json: (await response.json()) as { code: string; message: string } };
  }
  const draft = (filter: string) =>
    `{"destination":{"name":"nul","sourceIds":["${sourceId}"],"webhooks":[{"url":"https://hooks.example.com/"}],"filter":${filter}}}`;
  const cases = [
    ["DeliveryService/ExplainMessage", () => `{"messageId":"a\\u0000b"}`, "messageId: must not contain NUL characters"],
    [
      "DestinationService/TestDestination",
      () => `{"destination":{"sourceIds":["${sourceId}"]},"messageIds":["ok","a\\u0000b"]}`,
      "messageIds[1]: must not contain NUL characters",
    ],
    [
      "DestinationService/CreateDestination",
      () => draft(`{"a\\u0000b":1}`),
      String.raw`destination.filter: the key "a\u0000b" must not contain NUL characters`,
    ],
    [
      "DestinationService/CreateDestination",
      () => draft(`{"$or":[{"type":"x\\u0000"}]}`),
      "destination.filter.$or[0].type: must not contain NUL characters",
    ],
    [
      "DestinationService/TestDestination",
      () => `{"destination":{"sourceIds":["${sourceId}"],"filter":{"p":{"$in":["a","\\u0000"]}}}}`,
      "destination.filter.p.$in[1]: must not contain NUL characters",
    ],
    [
      "DestinationService/CreateDestination",
      () => draft(`{"a\\ud800":1}`),
      String.raw`destination.filter: the key "a\ud800" must not contain unpaired UTF-16 surrogates`,
    ],
  ] as const;

  test.for(cases)("%s: %s is 400 invalid_argument naming the field", async ([method, body, message], { server: strict }) => {
    const answer = await adminJson(strict, method, body());
    expect(answer.json.message).toBe(message);
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe("invalid_argument");
  });
});

test("server errors of RPCs are logged with their cause; client errors are not", async ({ server: strict }) => {
  const before = logs.length;
  await strict.pool.query("ALTER TABLE sources RENAME TO sources_away");
  try {
    const error = await failure(strict.sources.listSources({}));
    expect([Code.Internal, Code.Unknown]).toContain(error.code);
  } finally {
    await strict.pool.query("ALTER TABLE sources_away RENAME TO sources");
  }
  await failure(strict.sources.getSource({ id: "not-a-uuid" }));
  const lines = logs
    .slice(before)
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);
  const logged = lines.filter((line) => line.msg === "rpc failed with a server error");
  expect(logged).toHaveLength(1);
  expect(logged[0]).toMatchObject({ level: 50, rpc: "waypost.v1.SourceService/ListSources" });
  expect(logged[0]!.err.message).toContain('relation "sources" does not exist');
});
