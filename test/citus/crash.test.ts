import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { citusSkipReason, citusUrl, createCitusTestDatabase, type CitusTestDatabase } from "../helpers/citus.js";
import { createWorkerPool } from "../delivery/flow-support.js";
import { eventually } from "../helpers/process.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const run = promisify(execFile);

// Failures on a Citus cluster: a Waypost worker killed with SIGKILL, and a
// Citus worker node restarted under load. An API-only server takes the
// calls; worker processes (node dist/server.js) deliver them.
describe.skipIf(!citusUrl)(`crashes on a Citus cluster${citusSkipReason}`, () => {
  let database: CitusTestDatabase;
  let api: TestServer;
  const workers = createWorkerPool(() => database.url);
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    database = await createCitusTestDatabase();
    api = await startTestServer({ database, config: { role: "api" } });
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
    await database?.drop();
  });
  afterEach(async () => {
    await workers.stopAll();
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  const worker = (env: Record<string, string> = {}) => workers.start({ WAYPOST_POLL_INTERVAL_MS: "200", ...env });

  async function setup(respond: Responder) {
    const receiver = await startReceiver({ respond });
    receivers.push(receiver);
    const source = await api.createSource();
    const destination = await api.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    return { receiver, destination, client: api.tracking(source.writeKey) };
  }

  async function historyOf(destinationId: string) {
    const result = await api.pool.query<{ status: string; attempt_count: number }>(
      "SELECT status::text, attempt_count FROM delivery_history WHERE destination_id = $1",
      [destinationId],
    );
    return result.rows;
  }

  test("a Waypost worker killed with SIGKILL mid-delivery leaves the delivery to another after its lease", async () => {
    const { receiver, destination, client } = await setup((_, index) => (index === 0 ? { hang: true } : { status: 200 }));
    const first = await worker({ WAYPOST_LEASE_MS: "1500" });
    const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
    await receiver.waitForRequests(1);
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    await worker({ WAYPOST_LEASE_MS: "1500" });
    const [, second] = await receiver.waitForRequests(2);
    expect(JSON.parse(second!.body).messageId).toBe(messageId);
    const [final] = await eventually(async () => {
      const rows = await historyOf(destination.id);
      return rows.length === 1 && rows;
    });
    // The killed worker never recorded its attempt; the survivor's is the only one.
    expect(final).toEqual({ status: "delivered", attempt_count: 1 });
  });

  test("a Citus worker node restarted during ingest and delivery loses no acknowledged call", { timeout: 180_000 }, async () => {
    const { receiver, client } = await setup(() => ({ status: 200 }));
    await worker();
    const acknowledged = new Set<string>();
    let refused = 0;
    const node = await workerNode();
    let restarting: Promise<void> | undefined;
    for (let batch = 0; batch < 30; batch++) {
      // Not awaited: the next batches go in while the node stops and starts.
      if (batch === 10) restarting = restartNode(node.dataDirectory);
      const calls = Array.from({ length: 20 }, (_, i) => `r-${batch}-${i}`);
      try {
        await client.batch({
          batch: calls.map((messageId, i) => ({ type: { case: "track" as const, value: { userId: `u${i}`, event: "E", messageId } } })),
        });
        for (const id of calls) acknowledged.add(id);
      } catch {
        // Refused while the node was down: not acknowledged, so not owed.
        refused += 1;
      }
    }
    await restarting;
    expect(restarting).toBeDefined();
    // Once the node is back, calls are taken again (the pools replace the connections it dropped).
    await eventually(async () => {
      const calls = Array.from({ length: 20 }, (_, i) => `after-${i}`);
      try {
        await client.batch({
          batch: calls.map((messageId, i) => ({ type: { case: "track" as const, value: { userId: `u${i}`, event: "E", messageId } } })),
        });
      } catch {
        return false;
      }
      for (const id of calls) acknowledged.add(id);
      return true;
    }, 60_000);
    expect(acknowledged.size).toBeGreaterThan(0);
    await eventually(async () => {
      const seen = new Set(receiver.requests.map((r) => JSON.parse(r.body).messageId as string));
      return [...acknowledged].every((id) => seen.has(id));
    }, 120_000);
    const seen = new Set(receiver.requests.map((r) => JSON.parse(r.body).messageId as string));
    expect([...acknowledged].filter((id) => !seen.has(id))).toEqual([]);
    // Report what the restart cost, for the closing note's figures.
    console.info(`node restart: ${acknowledged.size} calls acknowledged, ${refused} batches refused while it restarted`);
  });
});

/** The cluster's second worker node: where it listens and its data directory. */
async function workerNode(): Promise<{ port: number; dataDirectory: string }> {
  const coordinator = new pg.Client({ connectionString: citusUrl });
  await coordinator.connect();
  let port: number;
  try {
    port = (
      await coordinator.query<{ nodeport: number }>("SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport DESC LIMIT 1")
    ).rows[0]!.nodeport;
  } finally {
    await coordinator.end();
  }
  const url = new URL(citusUrl!);
  url.port = String(port);
  const node = new pg.Client({ connectionString: url.toString() });
  await node.connect();
  try {
    return { port, dataDirectory: (await node.query<{ data_directory: string }>("SHOW data_directory")).rows[0]!.data_directory };
  } finally {
    await node.end();
  }
}

/** Restarts a node's Postgres (fast shutdown: its open transactions are rolled back), as its owner. */
async function restartNode(dataDirectory: string): Promise<void> {
  const command = `/usr/lib/postgresql/15/bin/pg_ctl -D ${dataDirectory} -m fast -w restart -l ${dataDirectory}/log`;
  if (process.getuid?.() === 0) await run("su", ["postgres", "-s", "/bin/bash", "-c", command]);
  else await run("bash", ["-c", command]);
}
