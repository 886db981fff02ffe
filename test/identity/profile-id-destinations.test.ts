import { describe, expect } from "vitest";
import { okRpc } from "../api/access/access-fixtures.js";
import { testWith } from "../helpers/fixtures.js";

// A destination with addProfileId sends each call with context.profileId:
// the person its userId (else anonymousId) belongs to, as a single webhook
// (per call) and as a batched one (the call log).

const test = testWith({ server: { config: { role: "all" } } });

type Body = { messageId: string; context?: { profileId?: string; library?: unknown } };

describe("destinations that add context.profileId", () => {
  test("single and batched webhooks carry the profile of the call's ids; a call of unknown ids carries none", async ({
    server,
    receivers,
  }) => {
    const source = await server.createSource();
    const tracking = server.tracking(source.writeKey);
    await tracking.identify({ identify: { userId: "cara", anonymousId: "cara-phone", messageId: "known-1" } });
    await server.waypost.identity!.caughtUp();
    const cara = (await okRpc(server, "ProfileService/GetProfile", { identifier: { type: "user_id", value: "cara" } })).profile as {
      id: string;
    };

    const [single, batched, plain] = [await receivers.start(), await receivers.start(), await receivers.start()];
    const enrich = { addProfileId: true };
    const made = await server.createDestination({
      name: "single",
      sourceIds: [source.id],
      enabled: true,
      webhooks: [{ url: single.url }],
      ...enrich,
    });
    expect(made.addProfileId).toBe(true);
    await server.createDestination({
      name: "batched",
      sourceIds: [source.id],
      enabled: true,
      webhooks: [{ url: batched.url, batch: { maxCalls: 3, maxWaitMs: 0 } }],
      ...enrich,
    });
    await server.createDestination({ name: "plain", sourceIds: [source.id], enabled: true, webhooks: [{ url: plain.url }] });

    const singleGot = single.waitForRequests(3);
    const plainGot = plain.waitForRequests(3);
    await tracking.track({ track: { userId: "cara", event: "Paid", messageId: "c-user", context: { library: { name: "x" } } as never } });
    await tracking.track({ track: { anonymousId: "cara-phone", event: "Scrolled", messageId: "c-anon" } });
    await tracking.track({ track: { anonymousId: "stranger", event: "Opened", messageId: "c-new" } });

    const bodies = (await singleGot).map((request) => JSON.parse(request.body) as Body);
    const byId = new Map(bodies.map((body) => [body.messageId, body]));
    expect(byId.get("c-user")?.context?.profileId).toBe(cara.id);
    expect(byId.get("c-user")?.context?.library).toEqual({ name: "x" });
    expect(byId.get("c-anon")?.context?.profileId).toBe(cara.id);
    expect(byId.get("c-new")?.context?.profileId).toBeUndefined();
    for (const request of await plainGot) expect((JSON.parse(request.body) as Body).context?.profileId).toBeUndefined();

    // The three calls may arrive in one batch or several (claims need not
    // take them together): read requests until all three are in.
    let sent: Body[] = [];
    for (let requests = 1; sent.length < 3; requests++) {
      sent = (await batched.waitForRequests(requests)).flatMap((request) => (JSON.parse(request.body) as { batch: Body[] }).batch);
    }
    const batchedById = new Map(sent.map((body) => [body.messageId, body]));
    expect(batchedById.get("c-user")?.context?.profileId).toBe(cara.id);
    expect(batchedById.get("c-new")?.context?.profileId).toBeUndefined();

    const updated = await okRpc(server, "DestinationService/UpdateDestination", {
      destination: { id: made.id, addProfileId: false },
      updateMask: "addProfileId",
    });
    expect((updated.destination as { addProfileId?: boolean }).addProfileId ?? false).toBe(false);
  });
});
