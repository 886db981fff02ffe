import { afterAll, beforeAll, expect, test } from "vitest";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let receiver: Receiver;

beforeAll(async () => {
  server = await startTestServer();
  receiver = await startReceiver();
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

test("a tracked call arrives at the webhook", async () => {
  const source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const { messageId } = await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Signed Up" } });
  const [request] = await receiver.waitForRequests(1);
  expect(JSON.parse(request!.body)).toMatchObject({ type: "track", userId: "u1", event: "Signed Up", messageId });
});
