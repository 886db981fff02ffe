import { describe, expect } from "vitest";
import { createAuditLog } from "../../src/access/audit-log.js";
import { parseAccess } from "../../src/access-config.js";
import { ManualClock } from "../../src/clock.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer } from "../helpers/server.js";

const test = testWith({});

describe("the audit log", () => {
  test("purges only what is past its retention", async ({ pool }) => {
    const clock = new ManualClock(new Date("2026-01-01T00:00:00Z"));
    const audit = createAuditLog({ pool, clock, logger: createLogger("silent") });
    await audit.record({
      actor: { kind: "admin-token", id: "admin-token", name: "admin token" },
      action: "source.create",
      targetId: "old",
    });
    clock.advance(40 * 24 * 60 * 60_000);
    await audit.record({
      actor: { kind: "admin-token", id: "admin-token", name: "admin token" },
      action: "source.create",
      targetId: "new",
    });
    expect(await audit.purge(30 * 24 * 60 * 60_000)).toBe(1);
    const { rows } = await pool.query("SELECT target_id FROM audit_events ORDER BY id");
    expect(rows.map((row) => row.target_id)).toEqual(["new"]);
  });

  test("goes, with WAYPOST_AUDIT_SOURCE_ID, into that source as calls any destination receives", async ({ server, receiver }) => {
    const source = await server.createSource("audit");
    await server.createDestination({ name: "siem", sourceIds: [source.id], enabled: true, webhooks: [{ url: receiver.url }] });
    const forwarding = await startTestServer({
      database: server.database,
      config: { access: parseAccess({ WAYPOST_AUDIT_SOURCE_ID: source.id }) },
    });
    try {
      const arrived = receiver.waitForRequests(1);
      await forwarding.sources.createSource({ source: { name: "watched" } });
      const [request] = await arrived;
      const body = JSON.parse(request!.body) as { type: string; event: string; userId: string; properties: Record<string, unknown> };
      expect(body).toMatchObject({ type: "track", event: "Audit Event", userId: "admin-token" });
      expect(body.properties).toMatchObject({ action: "source.create", actorName: "admin token", targetKind: "source", outcome: "ok" });
    } finally {
      await forwarding.stop();
    }
  });
});
