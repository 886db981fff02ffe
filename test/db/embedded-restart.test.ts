import { chmodSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect } from "vitest";
import { entry, eventually, launchService, runToExit, serviceEnv, type ServiceProcess } from "../helpers/process.js";
import { testWith } from "../helpers/fixtures.js";
import { testAdminToken } from "../helpers/server.js";

// The real server on its embedded Postgres, killed the way an OOM killer or
// `kill -9` kills it: its Postgres outlives it, and the next start must
// still come up on the same data directory and finish the work.

const test = testWith({ receiver: { respond: () => ({ status: 500, body: "down" }) } });
const started: ServiceProcess[] = [];

test.afterAll(() => {
  for (const service of started) if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL");
});

/** A data directory the embedded Postgres can use (as root it runs as another user). */
function dataDirectory(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-restart-"));
  chmodSync(dir, 0o755);
  return dir;
}

async function start(dataDir: string): Promise<ServiceProcess> {
  // A short lease: deliveries the killed process had claimed are free again soon after.
  const service = await launchService(
    process.execPath,
    [entry],
    serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir, WAYPOST_LEASE_MS: "1000" }),
  );
  started.push(service);
  return service;
}

function admin(service: ServiceProcess, rpc: string, body: unknown) {
  return fetch(`${service.url}/${rpc}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${testAdminToken}` },
    body: JSON.stringify(body),
  }).then((r) => r.json() as Promise<Record<string, Record<string, string>>>);
}

async function statusesOf(service: ServiceProcess): Promise<string[]> {
  const { deliveries } = (await admin(service, "waypost.v1.DeliveryService/ListDeliveries", {
    pageSize: 100,
    view: "DELIVERY_VIEW_BASIC",
  })) as unknown as { deliveries?: Array<{ status: string }> };
  return (deliveries ?? []).map((delivery) => delivery.status);
}

/** The pid in the cluster's postmaster.pid, while it has one. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(path.join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0];
    return state !== "Z";
  } catch {
    return false;
  }
}

describe.skipIf(!existsSync("/proc/self/stat"))("a crashed Waypost on the embedded Postgres", () => {
  test("after kill -9 with deliveries retrying, the next start takes over the data directory and delivers every call", async ({
    receiver,
  }) => {
    const dataDir = dataDirectory();
    const first = await start(dataDir);
    const { source } = await admin(first, "waypost.v1.SourceService/CreateSource", { source: { name: "web" } });
    await admin(first, "waypost.v1.DestinationService/CreateDestination", {
      destination: { name: "flaky", sourceIds: [source!.id], enabled: true, webhooks: [{ url: receiver.url }] },
    });
    const messageIds = Array.from({ length: 10 }, (_, i) => `crash-${i}`);
    const sent = await fetch(`${first.url}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${source!.writeKey}:`).toString("base64")}` },
      body: JSON.stringify({ batch: messageIds.map((messageId) => ({ type: "track", userId: "u1", event: "Crash", messageId })) }),
    });
    expect(sent.status).toBe(200);
    // Every call has been tried, has failed, and waits for its retry.
    await receiver.waitForRequests(messageIds.length);
    await eventually(async () => {
      const statuses = await statusesOf(first);
      return statuses.length === messageIds.length && statuses.every((status) => status === "DELIVERY_STATUS_RETRYING");
    }, 60_000);
    const orphan = postmasterPid(dataDir);
    expect(orphan).toBeGreaterThan(0);

    first.child.kill("SIGKILL");
    await first.exited;
    // Its Postgres is left running, with nobody to stop it.
    expect(alive(orphan!)).toBe(true);

    const second = await start(dataDir);
    expect(second.logs.join("\n")).toContain("stopping the embedded Postgres left running");
    expect(alive(orphan!)).toBe(false);
    expect(postmasterPid(dataDir)).not.toBe(orphan);

    const delivered = new Set<string>();
    receiver.respond = (request) => {
      delivered.add((JSON.parse(request.body) as { messageId: string }).messageId);
      return { status: 200, body: "ok" };
    };
    // The retries come from the delivery loop's own schedule; nothing is nudged.
    await eventually(async () => {
      const statuses = await statusesOf(second);
      return statuses.length === messageIds.length && statuses.every((status) => status === "DELIVERY_STATUS_DELIVERED");
    }, 90_000);
    expect([...delivered].sort()).toEqual([...messageIds].sort());

    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 180_000);

  test("a second Waypost on a data directory in use is refused, naming the process that has it", async () => {
    const dataDir = dataDirectory();
    const first = await start(dataDir);
    const second = await runToExit(serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir }));
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `waypost: failed to start: the data directory ${dataDir} is in use by another Waypost (pid ${first.child.pid})`,
    );
    expect(second.stderr).toContain("set WAYPOST_DATA_DIR");
    // The first one is untouched: its database still answers.
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(existsSync(path.join(dataDir, "waypost.pid"))).toBe(false);
  }, 120_000);
});
