import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";

const test = testWith();

test("a tracked call arrives at the webhook", async ({ server, receiver }) => {
  const source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const { messageId } = await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Signed Up" } });
  const [request] = await receiver.waitForRequests(1);
  expect(JSON.parse(request!.body)).toMatchObject({ type: "track", userId: "u1", event: "Signed Up", messageId });
});
