import { PassThrough } from "node:stream";
import { expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { createAddressGuard } from "../../src/outbound/address-guard.js";
import { createHttpClient } from "../../src/outbound/http-client.js";
import { createOperatorEvents } from "../../src/health/operator-events.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";

const secret = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;
const test = testWith();
let logs = "";
const logStream = new PassThrough();
logStream.on("data", (chunk: Buffer) => (logs += chunk.toString()));

function setup(url: string, allowPrivate: boolean) {
  const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
  const guard = createAddressGuard({ allowPrivate, allowedCidrs: [] });
  const dispatcher = createHttpClient({ guard, timeoutMs: 2_000 });
  const events = createOperatorEvents({
    webhook: { url, secret },
    dispatcher,
    guard,
    timeoutMs: 2_000,
    clock,
    logger: createLogger("info", logStream),
    retryDelaysMs: [5, 5],
  });
  return { clock, events, close: () => dispatcher.close() };
}

test("an event is a warn line and a signed POST, retried with the same webhook-id after a retryable failure", async ({ receiver }) => {
  receiver.requests.length = 0;
  receiver.respond = (_, index) => ({ status: index === 0 ? 503 : 200 });
  const { clock, events, close } = setup(receiver.url, true);
  events.emit("destination.circuit_opened", { destinationId: "d-1", name: "orders", consecutiveFailures: 20 });
  await events.flush();
  await close();
  expect(receiver.requests).toHaveLength(2);
  const [first, retry] = receiver.requests;
  expect(retry!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
  expect(retry!.headers["webhook-id"]).toMatch(/^evt_/);
  expect(verifyStandardWebhook(secret, retry!, clock.now())).toEqual({
    type: "destination.circuit_opened",
    timestamp: "2026-11-22T10:00:00.000Z",
    data: { destinationId: "d-1", name: "orders", consecutiveFailures: 20 },
  });
  const line = logs.split("\n").find((l) => l.includes('"event":"destination.circuit_opened"'));
  expect(JSON.parse(line!)).toMatchObject({ level: 40, destinationId: "d-1", consecutiveFailures: 20 });
});

test("the operator URL goes through the SSRF guard like any webhook", async ({ receiver }) => {
  receiver.requests.length = 0;
  const { events, close } = setup(receiver.url, false);
  events.emit("destination.circuit_closed", { destinationId: "d-2" });
  await events.flush();
  await close();
  expect(receiver.requests).toHaveLength(0);
  expect(logs).toMatch(/operator event could not be delivered/);
});
