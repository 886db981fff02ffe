import { PassThrough } from "node:stream";
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { DestinationHealth, DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const hour = 3_600_000;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
let logs = "";
const logStream = new PassThrough().on("data", (chunk: Buffer) => (logs += chunk.toString()));
const test = testWith({ server: { clock, logStream, config: { signingSecretOverlapMs: 2 * hour } } });

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  const error = await promise.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );
  if (!error) throw new Error("expected the call to fail");
  return error;
}

async function adminJson(server: TestServer, method: string, body: unknown) {
  const response = await fetch(`${server.url}/waypost.v1.DestinationService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

const hook = { url: "https://example.com/hook" };
const secret = () => `whsec_${randomBytes(32).toString("base64")}`;

test("a generated signing secret is shown once, in the create response, and is write-only after", async ({ server }) => {
  const { status, text } = await adminJson(server, "CreateDestination", {
    destination: { name: "std", webhooks: [hook] },
    generateSigningSecret: true,
  });
  expect(status).toBe(200);
  const created = JSON.parse(text) as {
    destination: { id: string; hasSigningSecret: boolean; signingSecrets?: string[] };
    signingSecret: string;
  };
  expect(created.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(created.destination.hasSigningSecret).toBe(true);
  expect(created.destination.signingSecrets).toBeUndefined();
  const got = await adminJson(server, "GetDestination", { id: created.destination.id });
  expect(got.text).not.toContain(created.signingSecret.slice(6));
  expect(JSON.parse(got.text).destination.hasSigningSecret).toBe(true);
  const listed = await adminJson(server, "ListDestinations", {});
  expect(listed.text).not.toContain(created.signingSecret.slice(6));
  expect(logs).not.toContain(created.signingSecret.slice(6));
});

test("given secrets are validated naming the field; a webhook-* static header is refused", async ({ server }) => {
  const short = await failure(
    server.destinations.createDestination({ destination: { name: "d", webhooks: [hook], signingSecrets: [secret(), "whsec_c2hvcnQ="] } }),
  );
  expect(short.code).toBe(Code.InvalidArgument);
  expect(short.rawMessage).toContain("destination.signingSecrets[1]");
  expect(short.rawMessage).toMatch(/24 to 64 bytes/);
  expect(short.rawMessage).not.toContain("c2hvcnQ");
  const prefix = await failure(
    server.destinations.createDestination({
      destination: { name: "d", webhooks: [hook], signingSecrets: [randomBytes(32).toString("base64")] },
    }),
  );
  expect(prefix.rawMessage).toMatch(/signingSecrets\[0\].*whsec_/);
  const tooMany = await failure(
    server.destinations.createDestination({
      destination: { name: "d", webhooks: [hook], signingSecrets: Array.from({ length: 6 }, secret) },
    }),
  );
  expect(tooMany.rawMessage).toMatch(/at most 5/);
  for (const name of ["webhook-signature", "Webhook-Id", "webhook-timestamp", "webhook-anything"]) {
    const header = await failure(
      server.destinations.createDestination({ destination: { name: "d", webhooks: [{ url: hook.url, headers: { [name]: "x" } }] } }),
    );
    expect(header.code).toBe(Code.InvalidArgument);
    expect(header.rawMessage).toContain(name);
  }
});

test("signing secrets are set and removed with the update mask; a new destination is healthy", async ({ server }) => {
  const created = await server.createDestination({ name: "upd", webhooks: [hook] });
  expect(created.hasSigningSecret).toBe(false);
  expect(created.health).toBe(DestinationHealth.HEALTHY);
  const set = await server.destinations.updateDestination({
    destination: { id: created.id, signingSecrets: [secret()] },
    updateMask: { paths: ["signing_secrets"] },
  });
  expect(set.destination?.hasSigningSecret).toBe(true);
  const cleared = await server.destinations.updateDestination({
    destination: { id: created.id, signingSecrets: [] },
    updateMask: { paths: ["signing_secrets"] },
  });
  expect(cleared.destination?.hasSigningSecret).toBe(false);
});

test("RotateSigningSecret: a new secret, the previous ones expiring after the overlap", async ({ server }) => {
  const first = secret();
  const created = await server.createDestination({ name: "rot", webhooks: [hook], signingSecrets: [first] });
  const { signingSecret, destination } = await server.destinations.rotateSigningSecret({ id: created.id });
  expect(signingSecret).toMatch(/^whsec_/);
  expect(signingSecret).not.toBe(first);
  expect(destination?.hasSigningSecret).toBe(true);
  const stored = async () =>
    (await server.pool.query("SELECT signing_secrets FROM destinations WHERE id = $1", [created.id])).rows[0].signing_secrets;
  expect(await stored()).toEqual([
    { secret: first, expiresAt: new Date(clock.now().getTime() + 2 * hour).toISOString() },
    { secret: signingSecret, expiresAt: null },
  ]);
  // An update after the overlap prunes the expired secret.
  clock.advance(2 * hour);
  await server.destinations.updateDestination({ destination: { id: created.id, name: "rot2" }, updateMask: { paths: ["name"] } });
  expect(await stored()).toEqual([{ secret: signingSecret, expiresAt: null }]);
  const missing = await failure(server.destinations.rotateSigningSecret({ id: "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10" }));
  expect(missing.code).toBe(Code.NotFound);
  // A destination without secrets gets its first one.
  const plain = await server.createDestination({ name: "plain", webhooks: [hook] });
  const rotated = await server.destinations.rotateSigningSecret({ id: plain.id });
  expect(rotated.destination?.hasSigningSecret).toBe(true);
});

test("RotateSigningSecret on a kind without signing secrets is refused, and stores nothing", async ({ server }) => {
  const nats = await server.createDestination({
    name: "no-secrets",
    kind: DestinationKind.NATS,
    nats: { servers: ["nats://nats.example.com:4222"] },
  });
  const refused = await failure(server.destinations.rotateSigningSecret({ id: nats.id }));
  expect(refused.code).toBe(Code.FailedPrecondition);
  expect(refused.rawMessage).toMatch(/has no signing secrets/);
  const { rows } = await server.pool.query("SELECT signing_secrets, revision FROM destinations WHERE id = $1", [nats.id]);
  expect(rows[0]).toMatchObject({ signing_secrets: [], revision: Number(nats.etag.slice(1)) });
});
