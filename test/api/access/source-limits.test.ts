import { describe, expect } from "vitest";
import { testWith } from "../../helpers/fixtures.js";
import { callRpc, createToken, okRpc } from "./access-fixtures.js";

// A token limited to some sources reaches those sources and the
// destinations that read only from them, and nothing else.

const test = testWith({ server: { config: { role: "api" } } });

describe("source limits", () => {
  test("a limited token sees and changes only its sources and their destinations", async ({ server }) => {
    const mine = await server.createSource("mine");
    const theirs = await server.createSource("theirs");
    const hook = { url: "http://127.0.0.1:9/hook" };
    const myDestination = await server.createDestination({ name: "mine", sourceIds: [mine.id], enabled: false, webhooks: [hook] });
    const theirDestination = await server.createDestination({ name: "theirs", sourceIds: [theirs.id], enabled: false, webhooks: [hook] });
    const shared = await server.createDestination({ name: "both", sourceIds: [mine.id, theirs.id], enabled: false, webhooks: [hook] });
    const token = await createToken(server, { role: "ROLE_EDITOR", sourceIds: [mine.id] });

    const sources = await okRpc(server, "SourceService/ListSources", {}, token.bearer);
    expect((sources.sources as Array<{ id: string }>).map((source) => source.id)).toEqual([mine.id]);
    const destinations = await okRpc(server, "DestinationService/ListDestinations", {}, token.bearer);
    expect((destinations.destinations as Array<{ id: string }>).map((destination) => destination.id)).toEqual([myDestination.id]);

    expect((await callRpc(server, "SourceService/GetSource", { id: mine.id }, token.bearer)).status).toBe(200);
    for (const [rpc, body] of [
      ["SourceService/GetSource", { id: theirs.id }],
      ["SourceService/RotateWriteKey", { id: theirs.id }],
      ["DestinationService/GetDestination", { id: theirDestination.id }],
      ["DestinationService/GetDestination", { id: shared.id }],
      ["DestinationService/UpdateDestination", { destination: { id: shared.id, name: "x" }, updateMask: "name" }],
      ["DeliveryService/ListDeliveries", { destinationId: theirDestination.id }],
      ["DestinationService/CreateDestination", { destination: { name: "n", sourceIds: [theirs.id], webhooks: [hook] } }],
      ["DestinationService/CreateDestination", { destination: { name: "n", sourceIds: [], webhooks: [hook] } }],
      ["TrackingPlanService/GetTrackingPlan", { sourceId: theirs.id }],
      // No source dimension declared: needs every source.
      ["SourceService/CreateSource", { source: { name: "new" } }],
      ["DeliveryService/GetDelivery", { id: "1" }],
    ] as const) {
      const answer = await callRpc(server, rpc, body, token.bearer);
      expect(answer.code, `${rpc} ${JSON.stringify(body)}: ${answer.message}`).toBe("permission_denied");
    }
    expect((await callRpc(server, "DestinationService/GetDestination", { id: myDestination.id }, token.bearer)).status).toBe(200);
    const renamed = await callRpc(
      server,
      "DestinationService/UpdateDestination",
      { destination: { id: myDestination.id, name: "renamed" }, updateMask: "name" },
      token.bearer,
    );
    expect(renamed.status, renamed.message).toBe(200);
    expect((await callRpc(server, "DeliveryService/ListDeliveries", { destinationId: myDestination.id }, token.bearer)).status).toBe(200);
  });

  test("a token cannot be made beyond its creator's sources or scopes", async ({ server }) => {
    const mine = await server.createSource("mine");
    const theirs = await server.createSource("theirs");
    const limitedAdmin = await createToken(server, { role: "ROLE_ADMIN", sourceIds: [mine.id] });
    const wider = await callRpc(
      server,
      "TokenService/CreateToken",
      { token: { name: "w", role: "ROLE_VIEWER", serviceAccount: true, sourceIds: [theirs.id] } },
      limitedAdmin.bearer,
    );
    expect(wider.code).toBe("permission_denied");
    expect(wider.message).toContain(theirs.id);
    const inherits = await okRpc(
      server,
      "TokenService/CreateToken",
      { token: { name: "i", role: "ROLE_VIEWER", serviceAccount: true } },
      limitedAdmin.bearer,
    );
    expect((inherits.token as { sourceIds: string[] }).sourceIds).toEqual([mine.id]);
    const editor = await createToken(server, { role: "ROLE_EDITOR" });
    const above = await callRpc(
      server,
      "TokenService/CreateToken",
      { token: { name: "a", role: "ROLE_ADMIN", serviceAccount: true } },
      editor.bearer,
    );
    expect(above.code).toBe("permission_denied");
    const scoped = await callRpc(
      server,
      "TokenService/CreateToken",
      { token: { name: "s", scopes: ["audit:read"], serviceAccount: true } },
      editor.bearer,
    );
    expect(scoped.code).toBe("permission_denied");
    expect(scoped.message).toMatch(/tokens:write|audit:read/);
    const unknown = await callRpc(server, "TokenService/CreateToken", { token: { name: "u", scopes: ["everything:all"] } });
    expect(unknown.code).toBe("invalid_argument");
    expect(unknown.message).toContain("everything:all");
    const both = await callRpc(server, "TokenService/CreateToken", { token: { name: "b", role: "ROLE_VIEWER", scopes: ["sources:read"] } });
    expect(both.code).toBe("invalid_argument");
    const past = await callRpc(server, "TokenService/CreateToken", {
      token: { name: "p", role: "ROLE_VIEWER", expireTime: "2000-01-01T00:00:00Z" },
    });
    expect(past.code).toBe("invalid_argument");
    expect(past.message).toContain("expireTime");
  });
});
