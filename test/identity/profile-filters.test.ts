import { describe, expect } from "vitest";
import { callRpc, okRpc } from "../api/access/access-fixtures.js";
import { testWith } from "../helpers/fixtures.js";

// Deliveries and fates searched by person: a profile's calls across all its
// ids, a merged profile's id standing for its survivor.

const test = testWith({ server: { config: { role: "all" } } });

describe("deliveries and fates by profile", () => {
  test("ListDeliveries and ListFates with profileId return the person's calls under every id", async ({ server, receiver }) => {
    const source = await server.createSource();
    const webhook = await server.createDestination({
      name: "hook",
      sourceIds: [source.id],
      enabled: true,
      webhooks: [{ url: receiver.url }],
    });
    const identifiesOnly = await server.createDestination({
      name: "identifies",
      sourceIds: [source.id],
      enabled: true,
      webhooks: [{ url: receiver.url }],
      filter: { type: "identify" },
    });
    const tracking = server.tracking(source.writeKey);
    const delivered = server.waitForDeliveries(5 + 2);
    await tracking.track({ track: { anonymousId: "ann-phone", event: "Opened", messageId: "a1" } });
    await tracking.track({ track: { anonymousId: "ann-laptop", event: "Opened", messageId: "a2" } });
    await tracking.identify({ identify: { userId: "ann", anonymousId: "ann-phone", messageId: "a3" } });
    await tracking.identify({ identify: { userId: "ann", anonymousId: "ann-laptop", messageId: "a4" } });
    await tracking.track({ track: { anonymousId: "ben-phone", event: "Opened", messageId: "b1" } });
    await delivered;
    await server.waypost.identity!.caughtUp();
    await server.waypost.delivery!.caughtUp();

    const ann = (await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "ann" } })).profile as {
      id: string;
      mergedIds: string[];
    };
    const listed = await okRpc(server, "DeliveryService/ListDeliveries", { destinationId: webhook.id, profileId: ann.id });
    const ids = (listed.deliveries as Array<{ messageId: string }>).map((delivery) => delivery.messageId).sort();
    expect(ids).toEqual(["a1", "a2", "a3", "a4"]);
    const byMerged = await okRpc(server, "DeliveryService/ListDeliveries", { destinationId: webhook.id, profileId: ann.mergedIds[0] });
    expect((byMerged.deliveries as unknown[]).length).toBe(4);

    const fates = await okRpc(server, "DeliveryService/ListFates", { destinationId: identifiesOnly.id, profileId: ann.id });
    expect((fates.calls as Array<{ messageId: string }>).map((call) => call.messageId).sort()).toEqual(["a1", "a2"]);

    const unknown = await callRpc(server, "DeliveryService/ListDeliveries", {
      destinationId: webhook.id,
      profileId: "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10",
    });
    expect(unknown.code).toBe("not_found");
    expect((await callRpc(server, "DeliveryService/ListDeliveries", { profileId: "nope" })).code).toBe("invalid_argument");
  });
});
