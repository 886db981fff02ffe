import { createHmac, randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { DeletionService } from "../../gen/waypost/v1/deletion_pb.js";
import { ManualClock } from "../../src/clock.js";
import { type TestReceivers, testWith } from "../helpers/fixtures.js";
import type { ReceivedRequest } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";
import { claimRound, healthConfig } from "../health/support.js";

const hour = 3_600_000;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const test = testWith({ server: { clock, config: healthConfig() } });

test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
});

const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;

async function setup(
  server: TestServer,
  receivers: TestReceivers,
  respond: (index: number) => number,
  init: { signingSecrets: string[]; sharedSecret?: string },
) {
  const receiver = await receivers.start({ respond: (_, index) => ({ status: respond(index) }) });
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "signed",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    ...init,
  });
  return { receiver, source, destination, client: server.tracking(source.writeKey) };
}

/** The next attempt of a retrying delivery: the clock moves to it. */
async function nextAttempt(server: TestServer, destinationId: string) {
  const row = await server.pool.query("SELECT min(run_at) AS at FROM deliveries WHERE destination_id = $1 AND status = 'retrying'", [
    destinationId,
  ]);
  clock.set(row.rows[0].at);
  await claimRound(server);
}

function signatures(request: ReceivedRequest): string[] {
  return String(request.headers["webhook-signature"]).split(" ");
}

test("every attempt verifies with the reference library; webhook-id is the messageId on every retry; X-Signature unchanged beside it", async ({
  server,
  receivers,
}) => {
  const secret = newSecret();
  const { receiver, destination, client } = await setup(server, receivers, (i) => (i === 0 ? 503 : 200), {
    signingSecrets: [secret],
    sharedSecret: "shh",
  });
  const { messageId } = await client.track({ track: { userId: "u", event: "Signed Up" } });
  const [first] = await receiver.waitForRequests(1);
  expect(first!.headers["webhook-id"]).toBe(messageId);
  expect(first!.headers["webhook-timestamp"]).toBe(String(clock.now().getTime() / 1000));
  expect(verifyStandardWebhook(secret, first!, clock.now())).toMatchObject({ event: "Signed Up", messageId });
  expect(first!.headers["x-signature"]).toBe(createHmac("sha1", "shh").update(first!.body).digest("hex"));
  await server.waypost.delivery!.settle();

  await nextAttempt(server, destination.id);
  const second = receiver.requests[1]!;
  expect(second.headers["webhook-id"]).toBe(messageId);
  expect(Number(second.headers["webhook-timestamp"])).toBe(clock.now().getTime() / 1000);
  expect(Number(second.headers["webhook-timestamp"])).toBeGreaterThan(Number(first!.headers["webhook-timestamp"]));
  expect(verifyStandardWebhook(secret, second, clock.now())).toMatchObject({ messageId });
  // The first request, replayed now (10 minutes later), is refused for its timestamp...
  expect(() => verifyStandardWebhook(secret, first!, clock.now())).toThrow(/too old/);
  // ...and its timestamp cannot be refreshed without breaking the signature.
  const forged = { ...first!, headers: { ...first!.headers, "webhook-timestamp": second.headers["webhook-timestamp"] } };
  expect(() => verifyStandardWebhook(secret, forged, clock.now())).toThrow(/No matching signature/);
});

test("after RotateSigningSecret both secrets verify until the overlap passes, then only the new one", async ({ server, receivers }) => {
  const old = newSecret();
  const { receiver, destination, client } = await setup(server, receivers, () => 200, { signingSecrets: [old] });
  const { signingSecret: fresh } = await server.destinations.rotateSigningSecret({ id: destination.id });
  const rotatedAt = clock.now().getTime();
  const send = async (event: string) => {
    const before = receiver.requests.length;
    await client.track({ track: { userId: "u", event } });
    const requests = await receiver.waitForRequests(before + 1);
    // Recorded before the clock jumps, or the jump would end its lease.
    await server.waypost.delivery!.settle();
    return requests[before]!;
  };

  const during = await send("right after");
  expect(signatures(during)).toHaveLength(2);
  expect(verifyStandardWebhook(old, during, clock.now())).toMatchObject({ event: "right after" });
  expect(verifyStandardWebhook(fresh, during, clock.now())).toMatchObject({ event: "right after" });

  clock.set(new Date(rotatedAt + 24 * hour - 1_000));
  const late = await send("last second of the overlap");
  expect(verifyStandardWebhook(old, late, clock.now())).toBeTruthy();
  expect(verifyStandardWebhook(fresh, late, clock.now())).toBeTruthy();

  clock.set(new Date(rotatedAt + 24 * hour));
  const after = await send("after the overlap");
  expect(signatures(after)).toHaveLength(1);
  expect(verifyStandardWebhook(fresh, after, clock.now())).toMatchObject({ event: "after the overlap" });
  expect(() => verifyStandardWebhook(old, after, clock.now())).toThrow(/No matching signature/);
});

test("delete notifications are signed with a stable webhook-id across retries", async ({ server, receivers }) => {
  const secret = newSecret();
  const { receiver, destination, client, source } = await setup(server, receivers, (i) => (i === 1 ? 503 : 200), {
    signingSecrets: [secret],
  });
  await client.track({ track: { userId: "gone", event: "E" } });
  await receiver.waitForRequests(1);
  const deletion = createClient(DeletionService, server.transport);
  await deletion.createDeletionRequest(
    { userId: "gone", sourceIds: [source.id] },
    { headers: { authorization: `Bearer ${server.adminToken}` } },
  );
  const [, first] = await receiver.waitForRequests(2);
  expect(JSON.parse(first!.body).type).toBe("delete");
  const id = first!.headers["webhook-id"];
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  expect(verifyStandardWebhook(secret, first!, clock.now())).toMatchObject({ type: "delete", userId: "gone" });
  await server.waypost.delivery!.settle();
  await nextAttempt(server, destination.id);
  const retry = receiver.requests[2]!;
  expect(retry.headers["webhook-id"]).toBe(id);
  expect(verifyStandardWebhook(secret, retry, clock.now())).toMatchObject({ type: "delete" });
});
