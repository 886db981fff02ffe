import { afterEach, expect } from "vitest";
import { eventually, startServiceProcess, type ServiceProcess } from "../helpers/process.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";

// An API-only server creates the data; deliveries are worked by separate processes.
const processes: ServiceProcess[] = [];
const receivers: Receiver[] = [];

const test = testWith({ server: { config: { role: "api" } } });
afterEach(async () => {
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await p.exited;
  }
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function worker(api: TestServer, env: Record<string, string> = {}) {
  const p = await startServiceProcess(api.database.url, { WAYPOST_ROLE: "worker", ...env });
  processes.push(p);
  return p;
}

async function setup(api: TestServer, respond: Responder) {
  const receiver = await startReceiver({ respond });
  receivers.push(receiver);
  const source = await api.createSource();
  await api.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  return { receiver, client: api.tracking(source.writeKey) };
}

async function statusOf(api: TestServer, messageId: string) {
  const result = await api.pool.query(
    `SELECT d.status, d.attempt_count FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1`,
    [messageId],
  );
  return result.rows[0] as { status: string; attempt_count: number };
}

test("a worker killed with SIGKILL mid-delivery leaves the work to another after its lease", async ({ server: api }) => {
  const { receiver, client } = await setup(api, (_, index) => (index === 0 ? { hang: true } : { status: 200 }));
  const first = await worker(api, { WAYPOST_LEASE_MS: "1500" });
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await receiver.waitForRequests(1);
  first.child.kill("SIGKILL");
  expect(await first.exited).toBe("SIGKILL");
  expect((await statusOf(api, messageId)).status).toBe("pending");
  await worker(api, { WAYPOST_LEASE_MS: "1500" });
  const [, second] = await receiver.waitForRequests(2);
  expect(JSON.parse(second!.body).messageId).toBe(messageId);
  const final = await eventually(async () => {
    const row = await statusOf(api, messageId);
    return row.status === "delivered" && row;
  });
  // The killed worker never recorded its attempt; the survivor's is the only one.
  expect(final.attempt_count).toBe(1);
});

// Generous limits: on a busy machine 2,000 deliveries may take a while; what is checked is that none is sent twice.
test("two worker processes never work the same delivery at once", { timeout: 120_000 }, async ({ server: api }) => {
  const { receiver, client } = await setup(api, () => ({ status: 200 }));
  const a = await worker(api);
  const b = await worker(api);
  const total = 2_000;
  for (let batch = 0; batch < total / 100; batch++) {
    await client.batch({
      batch: Array.from({ length: 100 }, (_, i) => ({
        type: { case: "track" as const, value: { userId: "u", event: "E", messageId: `m-${batch}-${i}` } },
      })),
    });
  }
  await receiver.waitForRequests(total);
  await eventually(async () => {
    const result = await api.pool.query("SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivered'");
    return result.rows[0].n >= total;
  }, 90_000);
  const metric = async (p: ServiceProcess, pattern: RegExp) => {
    const text = await (await fetch(`${p.url}/metrics`)).text();
    return [...text.matchAll(pattern)].reduce((sum, m) => sum + Number(m[1]), 0);
  };
  // Nothing is held or in flight any more: a send after a lost lease would have arrived.
  await eventually(
    async () =>
      (await metric(a, /^waypost_deliveries_in_flight (\d+)/gm)) + (await metric(b, /^waypost_deliveries_in_flight (\d+)/gm)) === 0,
    90_000,
  );
  // Every request the endpoint saw is an attempt recorded by the lease holder
  // (a request that timed out on a starved machine is a recorded retry, not a
  // second worker's send).
  const recorded = await api.pool.query<{ message_id: string; attempts: number }>(
    `SELECT m.message_id, count(a.attempt)::int AS attempts
       FROM deliveries d JOIN messages m ON m.id = d.message_pk
       LEFT JOIN delivery_attempts a ON a.destination_id = d.destination_id AND a.delivery_id = d.id
      WHERE m.message_id LIKE 'm-%'
      GROUP BY m.message_id`,
  );
  const sent = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = JSON.parse(r.body).messageId as string;
    sent.set(id, (sent.get(id) ?? 0) + 1);
  }
  const unrecorded = recorded.rows.filter((row) => (sent.get(row.message_id) ?? 0) !== row.attempts);
  expect(unrecorded).toEqual([]);
  expect(recorded.rows).toHaveLength(total);
  const delivered = (p: ServiceProcess) => metric(p, /waypost_deliveries_total\{[^}]*status="delivered"\} (\d+)/g);
  const [byA, byB] = [await delivered(a), await delivered(b)];
  expect(byA + byB).toBe(total);
  expect(byA).toBeGreaterThan(0);
  expect(byB).toBeGreaterThan(0);
});

test("SIGTERM finishes in-flight deliveries and exits cleanly", async ({ server: api }) => {
  let release: () => void = () => {};
  const answer = new Promise<void>((resolve) => (release = resolve));
  const { receiver, client } = await setup(api, () => ({ status: 200, after: answer }));
  const p = await worker(api);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await receiver.waitForRequests(1);
  p.child.kill("SIGTERM");
  await eventually(async () => p.logs.some((line) => line.includes("shutting down")));
  // The request is still open after the signal; answering it now must still count.
  release();
  expect(await p.exited).toBe(0);
  expect(await statusOf(api, messageId)).toEqual({ status: "delivered", attempt_count: 1 });
});
