import { afterAll, expect } from "vitest";
import { hookSettings, insertHookRequest, makeWebhookSource } from "../../helpers/hook-requests.js";
import { eventually, startServiceProcess, type ServiceProcess } from "../../helpers/process.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { startReceiver, type Receiver } from "../../helpers/receiver.js";

// An API-only server holds the data; worker processes turn the stored
// requests into calls. The first is killed with SIGKILL while it works
// through them and delivers them; a second takes the source and the
// deliveries over after their leases: every call is stored once, gets one
// delivery, and the live worker sends each once (on a starved machine its
// heartbeats may come after its leases ran out: it must not claim back what
// it still holds).
//
// The dead worker sends to an endpoint of its own, which never answers, and
// the destination is moved to the live worker's endpoint after the kill.
// One endpoint for both, answering from some moment on, cannot tell the
// two apart: a request the dead worker wrote just before the kill may be
// accepted and read by this (busy) process after that moment, so it is
// answered although its sender is gone, and the live worker rightly sends
// it again (delivery is at least once; nobody heard that answer).
/** The second worker's endpoint: answers 200 at once. */
let liveEnd: Receiver;
/** The messageIds of the calls the live endpoint answered. */
const answered: string[] = [];
const processes: ServiceProcess[] = [];

// The first worker's endpoint (the receiver) hangs: whatever it sends dies with it, whenever it arrives.
const test = testWith({ server: { config: { role: "api" } }, receiver: { respond: () => ({ hang: true }) } });
test.beforeAll(async () => {
  liveEnd = await startReceiver({
    respond: (request) => {
      answered.push((JSON.parse(request.body) as { messageId: string }).messageId);
      return { status: 200 };
    },
  });
});
afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(processes.map((p) => p.exited));
  await liveEnd?.close();
});

async function worker(api: TestServer, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const p = await startServiceProcess(api.database.url, {
    WAYPOST_ROLE: "worker",
    WAYPOST_LEASE_MS: "1500",
    WAYPOST_TRANSFORM_TIMEOUT_MS: "1000",
    ...env,
  });
  processes.push(p);
  return p;
}

const count = async (api: TestServer, status: string) =>
  Number((await api.pool.query("SELECT count(*) FROM hook_requests WHERE status = $1", [status])).rows[0].count);

test("a worker killed while it processes a source's requests loses none and duplicates none", { timeout: 180_000 }, async ({
  server: api,
  receiver: deadEnd,
}) => {
  const { id: sourceId } = await api.createSource("shop");
  // A few milliseconds of work per request, so the kill lands mid-way (with a time limit no busy machine reaches).
  await makeWebhookSource(
    api.pool,
    sourceId,
    hookSettings({
      transform: `function transform(r) {
        var until = Date.now() + 5; while (Date.now() < until) {}
        return [{ type: "track", userId: "u" + r.body.n, event: "Order" }, { type: "track", userId: "u" + r.body.n, event: "Paid" }];
      }`,
    }),
  );
  const destination = await api.createDestination({ name: "crm", sourceIds: [sourceId], webhooks: [{ url: deadEnd.url }] });
  const total = 400;
  const ids: string[] = [];
  for (let n = 0; n < total; n++) ids.push(await insertHookRequest(api.pool, sourceId, { body: { n } }));

  const first = await worker(api);
  await eventually(async () => (await count(api, "processed")) >= 50, 60_000);
  first.child.kill("SIGKILL");
  expect(await first.exited).toBe("SIGKILL");
  const left = await count(api, "pending");
  expect(left).toBeGreaterThan(0);

  await api.destinations.updateDestination({
    destination: { id: destination.id, webhooks: [{ url: liveEnd.url }] },
    updateMask: { paths: ["webhooks"] },
  });
  // A response time limit no busy machine reaches: a receiver too slow to
  // answer in time would rightly get the call again (at least once).
  await worker(api, { WAYPOST_ENDPOINT_TIMEOUT_MS: "60000" });
  await eventually(async () => (await count(api, "processed")) === total, 120_000);
  expect(await count(api, "failed")).toBe(0);
  const expected = ids.flatMap((id) => [`hook-${id}-0`, `hook-${id}-1`]).sort();
  const stored = await api.pool.query("SELECT message_id FROM messages WHERE source_id = $1 ORDER BY message_id", [sourceId]);
  expect(stored.rows.map((r) => r.message_id)).toEqual(expected);
  const deliveries = await api.pool.query(
    "SELECT count(*)::int AS n, count(DISTINCT d.message_pk)::int AS distinct FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.source_id = $1",
    [sourceId],
  );
  expect(deliveries.rows[0]).toEqual({ n: 2 * total, distinct: 2 * total });
  // Every call answered once (the ones the dead worker had in flight were sent again: nobody heard an answer to them).
  await eventually(async () => {
    const done = await api.pool.query(
      "SELECT count(*)::int AS n FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.source_id = $1 AND d.status = 'delivered'",
      [sourceId],
    );
    return done.rows[0].n === 2 * total;
  }, 120_000);
  expect([...answered].sort()).toEqual(expected);
});
