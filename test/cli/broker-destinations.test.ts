import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

// The broker kinds' flags: create, show masked, update one setting keeping the stored secret.
let env: NodeJS.ProcessEnv;
let sourceId = "";

const test = testWith({ server: { config: { role: "api" } } });
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  sourceId = (await server.createSource("cli brokers")).id;
});

const amqpUrl = "amqps://publisher:amqp-pa55@broker.example.com:5671/events";

test("destinations create --kind amqp: --amqp-url, --exchange, --routing-key; the password never printed, kept on update", async ({
  server,
}) => {
  const created = await waypostJson<{ destination: { id: string; kind: string; amqp: Record<string, unknown> } }>(
    [
      ..."destinations create --name rabbit --kind amqp".split(" "),
      ...["--source", sourceId, "--amqp-url", amqpUrl, "--exchange", "events", "--routing-key", "{type}.{event}"],
    ],
    env,
  );
  expect(created.destination.kind).toBe("DESTINATION_KIND_AMQP");
  expect(created.destination.amqp).toMatchObject({ exchange: "events", routingKey: "{type}.{event}", mandatory: true, hasAmqpUrl: true });
  expect(JSON.stringify(created)).not.toContain("amqp-pa55");

  const text = await waypost(["destinations", "get", created.destination.id], env);
  expect(text.stdout).toMatch(/kind:\s+amqp/);
  expect(text.stdout).toMatch(/routing key:\s+\{type\}\.\{event\}/);
  expect(text.stdout).not.toContain("amqp-pa55");

  const updated = await waypost(["destinations", "update", created.destination.id, "--routing-key", "{event}", "--mandatory", "no"], env);
  expect(updated.code, updated.stderr).toBe(0);
  const { rows } = await server.pool.query("SELECT amqp FROM destinations WHERE id = $1", [created.destination.id]);
  expect(rows[0].amqp).toEqual({ url: amqpUrl, exchange: "events", routingKey: "{event}", mandatory: false });
});

test("destinations create --kind nats: --nats-server, --subject, a write-only token kept on update", async ({ server }) => {
  const created = await waypostJson<{ destination: { id: string; kind: string; nats: Record<string, unknown> } }>(
    [
      ..."destinations create --name jets --kind nats".split(" "),
      ...["--source", sourceId, "--nats-server", "nats://nats.example.com:4222", "--subject", "events.{type}", "--nats-token", "tok-123"],
    ],
    env,
  );
  expect(created.destination.kind).toBe("DESTINATION_KIND_NATS");
  expect(created.destination.nats).toMatchObject({ servers: ["nats://nats.example.com:4222"], subject: "events.{type}", hasToken: true });
  expect(JSON.stringify(created)).not.toContain("tok-123");
  const updated = await waypost(["destinations", "update", created.destination.id, "--subject", "calls.{type}"], env);
  expect(updated.code, updated.stderr).toBe(0);
  const { rows } = await server.pool.query("SELECT nats FROM destinations WHERE id = $1", [created.destination.id]);
  expect(rows[0].nats).toMatchObject({ subject: "calls.{type}", token: "tok-123" });
});

test("usage errors name the missing flag; a bad template is the server's invalid_argument naming the field", async () => {
  const base = ["destinations", "create", "--name", "bad", "--source", sourceId];
  const [noUrl, noServer, badKind] = await Promise.all([
    waypost([...base, "--kind", "amqp"], env),
    waypost([...base, "--kind", "nats"], env),
    waypost([...base, "--kind", "kafka"], env),
  ]);
  expect(noUrl.code).toBe(2);
  expect(noUrl.stderr).toContain("--amqp-url");
  expect(noServer.code).toBe(2);
  expect(noServer.stderr).toContain("--nats-server");
  expect(badKind.stderr).toContain('--kind: "kafka" is not one of webhook, postgres, amqp, nats');
  const badKey = await waypost([...base, "--kind", "amqp", "--amqp-url", amqpUrl, "--routing-key", "{user}"], env);
  expect(badKey.code).toBe(1);
  expect(badKey.stderr).toMatch(/invalid_argument: destination\.amqp\.routingKey: /);
});
