import { PassThrough } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { describe, expect } from "vitest";
import { AudienceService } from "../../../gen/waypost/v1/audience_pb.js";
import { rpcRules } from "../../../src/api/access/rpc-scopes.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { callRpc, createToken, okRpc } from "./access-fixtures.js";

// Every change an admin RPC makes leaves an audit row, and no secret set
// through one shows in any row, log line or response that needs not carry it.

let logs = "";
const logStream = new PassThrough().on("data", (chunk: Buffer) => (logs += chunk.toString()));
const test = testWith({ server: { logStream, config: { logLevel: "debug" } }, receiver: { respond: () => ({ status: 400 }) } });

/** Secrets the test sets through the API: none may come back. */
const planted = {
  sharedSecret: "planted-shared-secret-1f9a",
  newSharedSecret: "planted-shared-secret-2b7c",
  header: "Bearer planted-header-credential-3d5e",
  hookSecret: "whsec_plantedhooksecret4a8b",
};

interface Made {
  sourceId: string;
  hookSourceId: string;
  destinationId: string;
  audienceId: string;
}

type Change = (server: TestServer, made: Made) => Promise<{ targetId: string; responses: unknown[] }>;

const admin = (server: TestServer) => ({ authorization: `Bearer ${server.adminToken}` });
const userId = "3f1c5c3e-4f51-4c8e-9f57-8f3c1d2b7a10";

async function insertUser(server: TestServer): Promise<string> {
  const { rows } = await server.pool.query(
    "INSERT INTO users (issuer, subject, email, role) VALUES ('https://idp.example', 'sub-audit', 'ana@example.org', 'viewer') RETURNING id",
  );
  return rows[0].id as string;
}

/** One successful call of every audited RPC, keyed as the scope table keys them. */
const changes: Record<string, Change> = {
  "SourceService/CreateSource": async (server) => {
    const body = await okRpc(server, "SourceService/CreateSource", { source: { name: "made" } });
    return { targetId: (body.source as { id: string }).id, responses: [] };
  },
  "SourceService/UpdateSource": async (server, made) => {
    const body = await okRpc(server, "SourceService/UpdateSource", {
      source: { id: made.hookSourceId, webhook: { verifier: "HOOK_VERIFIER_STRIPE", secret: planted.hookSecret } },
      updateMask: "webhook",
    });
    return { targetId: made.hookSourceId, responses: [body] };
  },
  "SourceService/RotateWriteKey": async (server, made) => {
    await okRpc(server, "SourceService/RotateWriteKey", { id: made.sourceId });
    return { targetId: made.sourceId, responses: [] };
  },
  "SourceService/RotateHookToken": async (server, made) => {
    await okRpc(server, "SourceService/RotateHookToken", { id: made.hookSourceId });
    return { targetId: made.hookSourceId, responses: [] };
  },
  "SourceService/DeleteSource": async (server) => {
    const { source } = await server.sources.createSource({ source: { name: "doomed" } });
    const body = await okRpc(server, "SourceService/DeleteSource", { id: source!.id });
    return { targetId: source!.id, responses: [body] };
  },
  "DestinationService/CreateDestination": async (server, made) => {
    const body = await okRpc(server, "DestinationService/CreateDestination", {
      destination: {
        name: "made",
        sourceIds: [made.sourceId],
        enabled: false,
        webhooks: [{ url: "http://127.0.0.1:9/hook", headers: { Authorization: planted.header, "X-Team": "growth" } }],
        sharedSecret: planted.sharedSecret,
      },
    });
    return { targetId: (body.destination as { id: string }).id, responses: [body] };
  },
  "DestinationService/UpdateDestination": async (server, made) => {
    const body = await okRpc(server, "DestinationService/UpdateDestination", {
      destination: { id: made.destinationId, name: "renamed", sharedSecret: planted.newSharedSecret },
      updateMask: "name,sharedSecret",
    });
    return { targetId: made.destinationId, responses: [body] };
  },
  "DestinationService/DeleteDestination": async (server, made) => {
    const destination = await server.createDestination({
      name: "doomed",
      sourceIds: [made.sourceId],
      enabled: false,
      webhooks: [{ url: "http://127.0.0.1:9/x" }],
    });
    await okRpc(server, "DestinationService/DeleteDestination", { id: destination.id });
    return { targetId: destination.id, responses: [] };
  },
  "DestinationService/RotateSigningSecret": async (server, made) => {
    await okRpc(server, "DestinationService/RotateSigningSecret", { id: made.destinationId });
    return { targetId: made.destinationId, responses: [] };
  },
  "DestinationService/TestDestination": async (server, made) => {
    const body = await okRpc(server, "DestinationService/TestDestination", {
      destination: { id: made.destinationId, name: "t", sourceIds: [made.sourceId], webhooks: [{ url: "http://127.0.0.1:9/t" }] },
    });
    return { targetId: made.destinationId, responses: [body] };
  },
  "DestinationService/BackfillDestination": async (server, made) => {
    await okRpc(server, "DestinationService/BackfillDestination", { destinationId: made.destinationId, since: "2020-01-01T00:00:00Z" });
    return { targetId: made.destinationId, responses: [] };
  },
  "DestinationService/CancelBackfill": async (server, made) => {
    const body = await okRpc(server, "DestinationService/BackfillDestination", {
      destinationId: made.destinationId,
      since: "2020-01-01T00:00:00Z",
    });
    const id = (body.backfill as { id: string }).id;
    await okRpc(server, "DestinationService/CancelBackfill", { id });
    return { targetId: id, responses: [] };
  },
  "DeliveryService/RetryDelivery": async (server, made) => {
    const { deliveries } = await server.deliveries.listDeliveries({ destinationId: made.destinationId });
    const id = deliveries[0]!.id;
    await okRpc(server, "DeliveryService/RetryDelivery", { id });
    return { targetId: id, responses: [] };
  },
  "DeliveryService/RetryDeliveries": async (server, made) => {
    await okRpc(server, "DeliveryService/RetryDeliveries", { destinationId: made.destinationId, statuses: ["DELIVERY_STATUS_FAILED"] });
    return { targetId: made.destinationId, responses: [] };
  },
  "HookService/ReprocessHookRequests": async (server, made) => {
    await okRpc(server, "HookService/ReprocessHookRequests", { sourceId: made.hookSourceId, since: "2020-01-01T00:00:00Z" });
    return { targetId: made.hookSourceId, responses: [] };
  },
  "AudienceService/CreateAudience": async (server, made) => {
    const body = await okRpc(server, "AudienceService/CreateAudience", { audience: { sourceId: made.sourceId, name: "Made Audience" } });
    return { targetId: (body.audience as { id: string }).id, responses: [] };
  },
  "AudienceService/SyncAudience": async (server, made) => {
    await okRpc(server, "AudienceService/SyncAudience", { audienceId: made.audienceId, userIds: ["u1"] });
    return { targetId: made.audienceId, responses: [] };
  },
  "AudienceService/StreamSyncAudience": async (server, made) => {
    const client = createClient(AudienceService, server.transport);
    async function* chunks() {
      yield { audienceId: made.audienceId, userIds: ["u2"] };
    }
    await client.streamSyncAudience(chunks(), { headers: admin(server) });
    return { targetId: "", responses: [] };
  },
  "AudienceService/SyncComputedTrait": async (server, made) => {
    const body = await okRpc(server, "AudienceService/CreateAudience", {
      audience: { sourceId: made.sourceId, name: "Score", kind: "AUDIENCE_KIND_COMPUTED_TRAIT" },
    });
    const id = (body.audience as { id: string }).id;
    await okRpc(server, "AudienceService/SyncComputedTrait", { audienceId: id, values: { u1: 42 } });
    return { targetId: id, responses: [] };
  },
  "AudienceService/StreamSyncComputedTrait": async (server, made) => {
    const body = await okRpc(server, "AudienceService/CreateAudience", {
      audience: { sourceId: made.sourceId, name: "Score 2", kind: "AUDIENCE_KIND_COMPUTED_TRAIT" },
    });
    const id = (body.audience as { id: string }).id;
    const client = createClient(AudienceService, server.transport);
    async function* chunks() {
      yield { audienceId: id, values: { u1: { kind: { case: "numberValue" as const, value: 7 } } } };
    }
    await client.streamSyncComputedTrait(chunks(), { headers: admin(server) });
    return { targetId: "", responses: [] };
  },
  "AudienceService/DeleteAudience": async (server, made) => {
    const body = await okRpc(server, "AudienceService/CreateAudience", { audience: { sourceId: made.sourceId, name: "Doomed" } });
    const id = (body.audience as { id: string }).id;
    await okRpc(server, "AudienceService/DeleteAudience", { id });
    return { targetId: id, responses: [] };
  },
  "DeletionService/CreateDeletionRequest": async (server, made) => {
    const body = await okRpc(server, "DeletionService/CreateDeletionRequest", { userId: "gone-user", sourceIds: [made.sourceId] });
    return { targetId: (body.deletionRequest as { id: string }).id, responses: [] };
  },
  "TrackingPlanService/SetTrackingPlan": async (server, made) => {
    await okRpc(server, "TrackingPlanService/SetTrackingPlan", { sourceId: made.sourceId, plan: { events: { Signed_Up: {} } } });
    return { targetId: made.sourceId, responses: [] };
  },
  "TokenService/CreateToken": async (server) => {
    const token = await createToken(server, { role: "ROLE_VIEWER" });
    return { targetId: token.id, responses: [] };
  },
  "TokenService/RevokeToken": async (server) => {
    const token = await createToken(server, { role: "ROLE_VIEWER" });
    await okRpc(server, "TokenService/RevokeToken", { id: token.id });
    return { targetId: token.id, responses: [] };
  },
  "AccessService/UpdateUser": async (server) => {
    const id = await insertUser(server);
    await okRpc(server, "AccessService/UpdateUser", { user: { id, role: "ROLE_EDITOR" }, updateMask: "role" });
    return { targetId: id, responses: [] };
  },
  "AccessService/RevokeSessions": async (server) => {
    await server.pool.query("UPDATE users SET disabled = false");
    const { rows } = await server.pool.query("SELECT id FROM users LIMIT 1");
    const id = (rows[0]?.id as string | undefined) ?? userId;
    await okRpc(server, "AccessService/RevokeSessions", { userId: id });
    return { targetId: id, responses: [] };
  },
};

describe("the audit log", () => {
  test("has a fixture here for every RPC the scope table marks as a change", () => {
    const audited = Object.entries(rpcRules)
      .filter(([, rule]) => rule.audit)
      .map(([key]) => key)
      .sort();
    expect(Object.keys(changes).sort()).toEqual(audited);
  });

  test("records every change with its actor, action, target and origin, and no secret anywhere", async ({ server, receiver }) => {
    const source = await server.createSource();
    const hook = await okRpc(server, "SourceService/CreateSource", {
      source: { name: "stripe", kind: "SOURCE_KIND_WEBHOOK", webhook: { verifier: "HOOK_VERIFIER_STRIPE", secret: planted.hookSecret } },
    });
    const destination = await server.createDestination({
      name: "d",
      sourceIds: [source.id],
      enabled: true,
      webhooks: [{ url: receiver.url }],
    });
    const failed = server.waitForDeliveries(1, ["failed"]);
    await server.tracking(source.writeKey).track({ track: { userId: "u1", event: "Signed Up" } });
    await failed;
    const audience = await okRpc(server, "AudienceService/CreateAudience", { audience: { sourceId: source.id, name: "Base" } });
    const made: Made = {
      sourceId: source.id,
      hookSourceId: (hook.source as { id: string }).id,
      destinationId: destination.id,
      audienceId: (audience.audience as { id: string }).id,
    };
    const responses: unknown[] = [];
    for (const [key, change] of Object.entries(changes)) {
      const {
        rows: [{ last }],
      } = await server.pool.query("SELECT coalesce(max(id), 0) AS last FROM audit_events");
      const result = await change(server, made);
      responses.push(...result.responses);
      const action = rpcRules[key]!.audit!.action;
      const { rows } = await server.pool.query("SELECT * FROM audit_events WHERE id > $1 AND action = $2", [last, action]);
      expect(rows.length, `${key} left no ${action} row`).toBeGreaterThanOrEqual(1);
      const row = rows[rows.length - 1];
      expect(row.actor_kind, key).toBe("admin-token");
      expect(row.actor_name, key).toBe("admin token");
      expect(row.client_address, key).toMatch(/127\.0\.0\.1/);
      expect(row.request_id, key).not.toBe("");
      if (result.targetId) expect(row.target_id, key).toBe(result.targetId);
    }
    const { rows: all } = await server.pool.query("SELECT * FROM audit_events");
    const everything = JSON.stringify(all) + JSON.stringify(responses) + logs;
    for (const [name, secret] of Object.entries(planted)) {
      expect(everything.includes(secret), `${name} leaked`).toBe(false);
      expect(everything.includes(secret.slice(-10)), `${name}'s end leaked`).toBe(false);
    }
    const update = all.find((row) => row.action === "destination.update");
    expect(update.diff.name).toEqual({ from: "d", to: "renamed" });
    expect(update.diff.sharedSecret).toBe("changed");
    const created = all.find((row) => row.action === "destination.create" && row.diff.name?.to === "made");
    expect(JSON.stringify(created.diff), JSON.stringify(created.diff)).toContain("X-Team");
    expect(created.diff.sharedSecret).toBe("changed");
    const tokenCreate = all.find((row) => row.action === "token.create");
    expect(tokenCreate.diff.name).toEqual({ to: "test token" });
    expect(tokenCreate.diff.role).toEqual({ to: "ROLE_VIEWER" });
    const tokenRevoke = all.find((row) => row.action === "token.revoke");
    expect(Object.keys(tokenRevoke.diff)).toEqual(["revokeTime"]);
    const hookUpdate = all.find((row) => row.action === "source.update");
    expect(hookUpdate.diff["webhook.secret"]).toBe("changed");
  });

  test("is append-only: updates and deletes are refused, the retention purge alone removes rows", async ({ server }) => {
    await createToken(server, { role: "ROLE_VIEWER" });
    await expect(server.pool.query("UPDATE audit_events SET action = 'x'")).rejects.toThrow(/append-only/);
    await expect(server.pool.query("DELETE FROM audit_events")).rejects.toThrow(/append-only/);
    const { rows: before } = await server.pool.query("SELECT count(*)::int AS n FROM audit_events");
    expect(before[0].n).toBeGreaterThan(0);
    await server.pool.query(
      "BEGIN; SELECT set_config('waypost.audit_purge', 'on', true); DELETE FROM audit_events WHERE at < now() - interval '1 day'; COMMIT;",
    );
    const { rows: after } = await server.pool.query("SELECT count(*)::int AS n FROM audit_events");
    expect(after[0].n).toBe(before[0].n);
  });

  test("ListAuditEvents filters by actor, target, action and time, newest first, and pages", async ({ server }) => {
    const viewer = await createToken(server, { role: "ROLE_VIEWER" });
    const editor = await createToken(server, { role: "ROLE_EDITOR" });
    await okRpc(server, "SourceService/CreateSource", { source: { name: "by editor" } }, editor.bearer);
    await okRpc(server, "TokenService/RevokeToken", { id: viewer.id });
    const all = await okRpc(server, "AuditService/ListAuditEvents", { pageSize: 2 });
    const events = all.events as Array<{ id: string; action: string; actorId: string; targetId: string }>;
    expect(events).toHaveLength(2);
    expect(Number(events[0]!.id)).toBeGreaterThan(Number(events[1]!.id));
    expect(all.nextPageToken).not.toBe("");
    const next = await okRpc(server, "AuditService/ListAuditEvents", { pageSize: 2, pageToken: all.nextPageToken });
    expect((next.events as Array<{ id: string }>)[0]!.id).not.toBe(events[1]!.id);
    const byActor = await okRpc(server, "AuditService/ListAuditEvents", { actorId: editor.id });
    expect((byActor.events as Array<{ action: string }>).map((event) => event.action)).toEqual(["source.create"]);
    const byTarget = await okRpc(server, "AuditService/ListAuditEvents", { targetId: viewer.id });
    expect((byTarget.events as Array<{ action: string }>).map((event) => event.action)).toEqual(["token.revoke", "token.create"]);
    const byPrefix = await okRpc(server, "AuditService/ListAuditEvents", { action: "token." });
    const { rows: tokenRows } = await server.pool.query("SELECT count(*)::int AS n FROM audit_events WHERE action LIKE 'token.%'");
    const prefixed = (byPrefix.events as Array<{ action: string }>).map((event) => event.action);
    expect(prefixed.length).toBe(tokenRows[0].n);
    expect(prefixed.every((action) => action.startsWith("token."))).toBe(true);
    const future = await okRpc(server, "AuditService/ListAuditEvents", { startTime: "2999-01-01T00:00:00Z" });
    expect(future.events ?? []).toEqual([]);
    const bad = await callRpc(server, "AuditService/ListAuditEvents", { pageToken: "nonsense" });
    expect(bad.code).toBe("invalid_argument");
    const refused = await callRpc(server, "AuditService/ListAuditEvents", {}, editor.bearer);
    expect(refused.code).toBe("permission_denied");
    expect(refused.message).toContain("audit:read");
  });
});
