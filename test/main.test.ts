import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { testWith } from "./helpers/fixtures.js";
import { entry, eventually, launchService, runToExit, serviceEnv, type ServiceProcess } from "./helpers/process.js";
import { startReceiver, type Receiver } from "./helpers/receiver.js";
import { testAdminToken } from "./helpers/server.js";

// The process as an operator runs it: `npm start` and `node dist/server.js`,
// stopped by signals, failing to start for reasons it must name.

const root = fileURLToPath(new URL("..", import.meta.url));
const test = testWith();
const started: ServiceProcess[] = [];

afterAll(async () => {
  for (const service of started) if (service.child.exitCode === null) service.child.kill("SIGKILL");
});

/** A data directory the embedded Postgres can use (as root it runs as another user). */
function dataDirectory(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-life-"));
  chmodSync(dir, 0o755);
  return dir;
}

/**
 * Live processes of one data directory: Waypost servers started with it
 * (by their environment) and Postgres servers running a cluster in it (by
 * their command line). Zombies, which hold nothing, are not counted.
 */
function processesOf(dataDir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0];
      if (state === "Z") continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (cmdline.includes("postgres") && cmdline.includes(dataDir)) found.push(`${pid} ${cmdline}`);
      else if (
        cmdline.includes("dist/server.js") &&
        readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`WAYPOST_DATA_DIR=${dataDir}`)
      ) {
        found.push(`${pid} ${cmdline}`);
      }
    } catch {
      // The process ended while being read.
    }
  }
  return found;
}

describe.skipIf(!existsSync("/proc/self/environ"))("npm start with the embedded Postgres", () => {
  test("a second start in the same folder names the cause; SIGTERM to npm leaves no process behind", async () => {
    const dataDir = dataDirectory();
    const env = serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir });
    const npm = await launchService("npm", ["start"], env, root);
    started.push(npm);
    // The server and its Postgres run, in this data directory.
    expect(processesOf(dataDir).some((p) => p.includes("dist/server.js"))).toBe(true);
    expect(processesOf(dataDir).some((p) => p.includes("postgres"))).toBe(true);
    const health = await fetch(`${npm.url}/healthz`);
    expect(health.status).toBe(200);

    const second = await runToExit(serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir }));
    expect(second.code).toBe(1);
    const server = processesOf(dataDir)
      .find((p) => p.includes("dist/server.js"))!
      .split(" ")[0];
    expect(second.stderr).toContain(`waypost: failed to start: the data directory ${dataDir} is in use by another Waypost (pid ${server})`);
    expect(second.stderr).toContain("set WAYPOST_DATA_DIR");
    expect(second.stderr).not.toContain("undefined");

    npm.child.kill("SIGTERM");
    await eventually(async () => processesOf(dataDir).length === 0, 30_000).catch(() => {
      throw new Error(`left running after SIGTERM to npm:\n${processesOf(dataDir).join("\n")}`);
    });
    expect(processesOf(dataDir)).toEqual([]);
  }, 180_000);
});

test("a port in use is named, with the setting to change, before any database connection is attempted", async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const port = (taken.address() as net.AddressInfo).port;
  // Stands where the database would be: it counts connections and closes them
  // (so a process that does connect fails on the database, not on the port).
  let databaseConnections = 0;
  const databaseStandIn = net.createServer((socket) => {
    databaseConnections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => databaseStandIn.listen(0, "127.0.0.1", resolve));
  const databasePort = (databaseStandIn.address() as net.AddressInfo).port;
  try {
    const result = await runToExit(serviceEnv(`postgres://postgres@127.0.0.1:${databasePort}/waypost`, { PORT: String(port) }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`waypost: failed to start: port ${port} on 127.0.0.1 is in use`);
    expect(result.stderr).toContain("set PORT");
    expect(databaseConnections).toBe(0);
  } finally {
    await new Promise((resolve) => taken.close(resolve));
    await new Promise((resolve) => databaseStandIn.close(resolve));
  }
}, 60_000);

test("a WAYPOST_EMBEDDED_POSTGRES_PORT in use is named, with the setting to change, and the data directory is left unlocked", async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const port = (taken.address() as net.AddressInfo).port;
  const dataDir = dataDirectory();
  try {
    const result = await runToExit(serviceEnv(undefined, { WAYPOST_DATA_DIR: dataDir, WAYPOST_EMBEDDED_POSTGRES_PORT: String(port) }));
    expect(result.code).toBe(1);
    const [line, cause] = result.stderr.split("\n");
    expect(line).toBe(
      `waypost: failed to start: the embedded Postgres cannot listen on 127.0.0.1:${port}: the port is in use. ` +
        "Set WAYPOST_EMBEDDED_POSTGRES_PORT to another port, or leave it unset for a free one",
    );
    // Postgres's own words follow, as the cause.
    expect(cause).toContain('could not bind IPv4 address "127.0.0.1": Address already in use');
    expect(existsSync(path.join(dataDir, "waypost.pid"))).toBe(false);
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
}, 120_000);

test("a bad WAYPOST_LOG_LEVEL or a DATABASE_URL of another database is named, with exit code 2 and no stack trace", async ({
  database,
}) => {
  const [level, mysql] = await Promise.all([
    runToExit(serviceEnv(database.url, { WAYPOST_LOG_LEVEL: "verbose" })),
    runToExit(serviceEnv("mysql://root:hunter2-secret@127.0.0.1:3306/waypost")),
  ]);
  expect(level).toEqual({
    code: 2,
    stderr: 'waypost: WAYPOST_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n',
  });
  expect(mysql.code).toBe(2);
  expect(mysql.stderr).toMatch(
    /^waypost: DATABASE_URL must be a Postgres URL like postgres:\/\/user:password@host:5432\/database, got a mysql: URL/,
  );
  expect(mysql.stderr).not.toContain("hunter2-secret");
  expect(mysql.stderr.trim().split("\n")).toHaveLength(1);
}, 60_000);

test("at info, the start-up line gives the settings in effect and the console's URL", async ({ database }) => {
  const service = await launchService(
    process.execPath,
    [entry],
    serviceEnv(database.url, {
      WAYPOST_CORS_ORIGINS: "https://shop.example.com",
      WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/8",
      WAYPOST_DELIVERY_CONCURRENCY: "100",
      WAYPOST_RETENTION_DAYS: "3",
    }),
  );
  started.push(service);
  try {
    const line = service.logs
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "Waypost is listening")!;
    expect(line).toMatchObject({
      level: 30,
      url: service.url,
      role: "all",
      consoleUrl: `${service.url}/console/`,
      corsOrigins: ["https://shop.example.com"],
      privateDestinations: ["10.0.0.0/8"],
      concurrency: 100,
      perDestinationConcurrency: 64,
      retentionDays: 3,
    });
    expect(JSON.stringify(line)).not.toContain(testAdminToken);
    const console = await fetch(line.consoleUrl as string);
    expect(console.status).toBe(200);
    expect(console.headers.get("content-type")).toMatch(/^text\/html/);
  } finally {
    service.child.kill("SIGTERM");
    expect(await service.exited).toBe(0);
  }
}, 60_000);

test("an unreachable DATABASE_URL is named, without its password", async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const result = await runToExit(serviceEnv(`postgres://postgres:hunter2-secret@127.0.0.1:${port}/waypost`));
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(`waypost: failed to start: cannot connect to the database at 127.0.0.1:${port}/waypost`);
  expect(result.stderr).toContain("ECONNREFUSED");
  expect(result.stderr).toContain("DATABASE_URL");
  expect(result.stderr).not.toContain("hunter2-secret");
}, 60_000);

describe("signals", () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver({ respond: () => ({ hang: true }) });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  test("the first SIGTERM waits for in-flight work; a second signal exits at once", async ({ database }) => {
    const service = await launchService(
      process.execPath,
      [entry],
      serviceEnv(database.url, { WAYPOST_ENDPOINT_TIMEOUT_MS: "60000", WAYPOST_SHUTDOWN_TIMEOUT_MS: "60000" }),
    );
    started.push(service);
    const admin = (rpc: string, body: unknown) =>
      fetch(`${service.url}/${rpc}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${testAdminToken}` },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<Record<string, Record<string, string>>>);
    const { source } = await admin("waypost.v1.SourceService/CreateSource", { source: { name: "web" } });
    await admin("waypost.v1.DestinationService/CreateDestination", {
      destination: { name: "slow", sourceIds: [source!.id], enabled: true, webhooks: [{ url: receiver.url }] },
    });
    const arrived = receiver.waitForRequests(1);
    const sent = await fetch(`${service.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${source!.writeKey}:`).toString("base64")}` },
      body: JSON.stringify({ userId: "u1", event: "Slow" }),
    });
    expect(sent.status).toBe(200);
    await arrived;

    service.child.kill("SIGTERM");
    await eventually(async () => service.logs.some((line) => line.includes("shutting down")), 10_000);
    // The delivery is still in flight (its endpoint answers in 60 s at most): the process waits for it.
    expect(service.child.exitCode).toBe(null);
    service.child.kill("SIGINT");
    // 130, not 0: it exited on the signal, not once the delivery finished.
    expect(await service.exited).toBe(130);
    expect(service.logs.join("\n")).toContain("second signal: exiting now");
  }, 60_000);
});
