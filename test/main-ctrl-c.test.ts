import { chmodSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { entry, eventually, launchService, serviceEnv, type ServiceProcess } from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/receiver.js";
import { testAdminToken } from "./helpers/server.js";

// Ctrl-C on `npm start` as a terminal delivers it: SIGINT to the whole
// foreground process group (the server and anything it started in that
// group), and a second SIGINT a moment later (npm forwarding its own copy).
// One press must be one graceful stop, on the embedded Postgres.

const started: ServiceProcess[] = [];
const receivers: Receiver[] = [];

afterAll(async () => {
  for (const service of started) if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL");
  for (const receiver of receivers) await receiver.close();
});

/** A data directory the embedded Postgres can use (as root it runs as another user). */
function dataDirectory(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-ctrl-c-"));
  chmodSync(dir, 0o755);
  return dir;
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function admin(service: ServiceProcess, rpc: string, body: unknown) {
  return fetch(`${service.url}/${rpc}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${testAdminToken}` },
    body: JSON.stringify(body),
  }).then((r) => r.json() as Promise<Record<string, Record<string, string>>>);
}

/** postmaster.pid: pid on line 1, port on line 4; undefined once Postgres has stopped. */
function postmaster(dataDir: string): { pid: number; port: number } | undefined {
  try {
    const lines = readFileSync(path.join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n");
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0] !== "Z";
  } catch {
    return false;
  }
}

/** Process group id, field 5 of /proc/PID/stat. */
function processGroup(pid: number): number {
  return Number(
    readFileSync(`/proc/${pid}/stat`, "utf8")
      .replace(/^.*\) /, "")
      .split(" ")[2],
  );
}

describe.skipIf(!existsSync("/proc/self/stat"))("Ctrl-C on the server with its embedded Postgres", () => {
  test("SIGINT to the process group, then again: the in-flight delivery is finished and recorded, the lock removed, Postgres stopped cleanly, exit 0", async () => {
    const dataDir = dataDirectory();
    const postgresPort = await freePort();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const receiver = await startReceiver({ respond: () => ({ status: 200, body: "ok", after: released }) });
    receivers.push(receiver);
    const env = serviceEnv(undefined, {
      WAYPOST_DATA_DIR: dataDir,
      WAYPOST_EMBEDDED_POSTGRES_PORT: String(postgresPort),
      WAYPOST_ENDPOINT_TIMEOUT_MS: "60000",
      WAYPOST_SHUTDOWN_TIMEOUT_MS: "60000",
      // The repeated signal is reported at debug.
      WAYPOST_LOG_LEVEL: "debug",
    });
    const service = await launchService(process.execPath, [entry], env, undefined, { detached: true });
    started.push(service);
    const group = service.child.pid!;
    const first = postmaster(dataDir)!;
    // The setting is the port Postgres listens on.
    expect(first.port).toBe(postgresPort);
    // Postgres runs in a process group of its own, out of reach of the terminal's signal.
    expect(processGroup(first.pid)).not.toBe(group);

    const { source } = await admin(service, "waypost.v1.SourceService/CreateSource", { source: { name: "web" } });
    await admin(service, "waypost.v1.DestinationService/CreateDestination", {
      destination: { name: "slow", sourceIds: [source!.id], enabled: true, webhooks: [{ url: receiver.url }] },
    });
    const arrived = receiver.waitForRequests(1);
    const sent = await fetch(`${service.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${source!.writeKey}:`).toString("base64")}` },
      body: JSON.stringify({ userId: "u1", event: "Slow", messageId: "in-flight-1" }),
    });
    expect(sent.status).toBe(200);
    await arrived;
    const logsBefore = service.logs.length;

    // The terminal's copy, to the whole group...
    process.kill(-group, "SIGINT");
    await eventually(async () => service.logs.some((line) => line.includes("shutting down")), 30_000);
    // ...and npm's, a moment later (to the group too: the harder case).
    process.kill(-group, "SIGINT");
    const exitedEarly = service.exited.then((code) => `exited (${code})`);
    const repeated = eventually(async () => service.logs.some((line) => line.includes("the same stop signal again")), 30_000).then(
      () => "repeat seen",
    );
    expect(await Promise.race([repeated, exitedEarly])).toBe("repeat seen");
    // Still waiting for the delivery in flight; Postgres still runs to record it.
    expect(service.child.exitCode).toBe(null);
    expect(alive(first.pid)).toBe(true);

    release();
    expect(await service.exited).toBe(0);
    expect(existsSync(path.join(dataDir, "waypost.pid"))).toBe(false);
    expect(postmaster(dataDir)).toBeUndefined();
    expect(alive(first.pid)).toBe(false);
    // A clean shutdown logs no warning (no 57P01 "terminating connection" from a Postgres stopped under open connections).
    const shutdownLogs = service.logs.slice(logsBefore);
    expect(shutdownLogs.filter((line) => /57P01|"level":(40|50|60)/.test(line))).toEqual([]);
    expect(shutdownLogs.filter((line) => line.length > 2_000)).toEqual([]);

    // The next start finds a cluster shut down cleanly (not one to recover) and the delivery recorded.
    const next = await launchService(process.execPath, [entry], { ...env, WAYPOST_SHUTDOWN_TIMEOUT_MS: "10000" });
    started.push(next);
    const startLogs = next.logs.join("\n");
    expect(startLogs).toContain("database system was shut down at");
    expect(startLogs).not.toContain("left running");
    const { deliveries } = (await admin(next, "waypost.v1.DeliveryService/ListDeliveries", {
      pageSize: 10,
      view: "DELIVERY_VIEW_BASIC",
    })) as unknown as { deliveries?: Array<{ messageId: string; status: string; attemptCount: number }> };
    expect(deliveries).toEqual([
      expect.objectContaining({ messageId: "in-flight-1", status: "DELIVERY_STATUS_DELIVERED", attemptCount: 1 }),
    ]);
    expect(receiver.requests).toHaveLength(1);
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  }, 180_000);
});
