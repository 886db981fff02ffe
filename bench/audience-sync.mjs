// @ts-check
// Audience sync at scale: a first sync of 1,000,000 members and a later sync
// with 1% changed, through the streaming RPC, with the server's memory.
//
//   npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/audience-sync.mjs
//
// Options: --members=N (default 1000000), --per-message=N (ids per stream
// message, default 10000), --changed=0.01.
//
// The server runs in a child process (startWaypost with a config from
// loadConfig, on a fresh database of DATABASE_URL's server) so that its
// resident memory is measured apart from this client's. It runs with role
// "api": the generated deliveries are created (that cost is measured) but
// not sent. With WAYPOST_URL and WAYPOST_ADMIN_TOKEN set it uses that
// endpoint instead (no memory figures then; its DATABASE_URL is still used
// for the baseline).
//
// Prints one JSON object per line.
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { AudienceService } from "../dist/gen/waypost/v1/audience_pb.js";
import { DestinationService } from "../dist/gen/waypost/v1/destination_pb.js";
import { SourceService } from "../dist/gen/waypost/v1/source_pb.js";
import { storeMessages } from "../dist/src/db/job-table/store-messages.js";
import { emptyCall } from "../dist/src/calls/call.js";
import { buildCallPayload } from "../dist/src/ingest/payload.js";

const arg = (/** @type {string} */ name, /** @type {number} */ fallback) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.split("=")[1]) : fallback;
};
const members = arg("members", 1_000_000);
const perMessage = arg("per-message", 10_000);
const changedShare = arg("changed", 0.01);
const report = (/** @type {object} */ object) => process.stdout.write(`${JSON.stringify(object)}\n`);
const userId = (/** @type {number} */ n) => `user-${String(n).padStart(9, "0")}`;

// The server as a child process: `node -e` running startWaypost.
const serverScript = `
  import { loadConfig } from ${JSON.stringify(new URL("../dist/src/config.js", import.meta.url).href)};
  import { createLogger } from ${JSON.stringify(new URL("../dist/src/logger.js", import.meta.url).href)};
  import { startWaypost } from ${JSON.stringify(new URL("../dist/src/server.js", import.meta.url).href)};
  const config = loadConfig(process.env);
  const waypost = await startWaypost({ config, logger: createLogger(config.logLevel) });
  process.send({ url: waypost.url });
  process.on("message", async (message) => {
    if (message === "heap") {
      // Live heap: what is reachable after a full collection, garbage excluded.
      globalThis.gc();
      process.send({ heap: process.memoryUsage().heapUsed });
      return;
    }
    await waypost.stop();
    process.exit(0);
  });
`;

/**
 * @typedef {{ url: string, pid: number | undefined, liveHeapMb?: () => Promise<number>, stop: () => Promise<unknown> }} Server
 */

/**
 * @param {string} databaseUrl
 * @param {string} adminToken
 * @returns {Promise<Server>}
 */
async function startServer(databaseUrl, adminToken) {
  // BENCH_CPU_PROF=dir writes a V8 CPU profile of the server there.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, "--expose-gc", "--input-type=module", "-e", serverScript], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      WAYPOST_ROLE: "api",
      WAYPOST_ADMIN_TOKEN: adminToken,
      // The destination below points at a closed loopback port (role "api" never sends to it).
      WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true",
      WAYPOST_DATA_DIR: `/tmp/waypost-bench-audience-${process.pid}`,
      WAYPOST_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  /** @type {{ url: string }} */
  const { url } = await new Promise((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (code) => reject(new Error(`server exited (${code}) before listening`)));
  });
  return {
    url,
    pid: child.pid,
    /** The server's live heap in MB (after a full collection). */
    liveHeapMb: () =>
      new Promise((resolve) => {
        const onMessage = (/** @type {any} */ message) => {
          if (message && typeof message.heap === "number") {
            child.off("message", onMessage);
            resolve(Math.round(message.heap / 1048576));
          }
        };
        child.on("message", onMessage);
        child.send("heap");
      }),
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.send("stop");
      }),
  };
}

/**
 * Resident memory of a process, in MB: now (VmRSS) and its peak so far (VmHWM).
 * @param {number} pid
 */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mb = (/** @type {string} */ field) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
  return { rss: mb("VmRSS"), hwm: mb("VmHWM") };
}

/**
 * Samples a process's RSS every 50 ms; returns the peak seen.
 * @param {number | undefined} pid
 */
function sampleRss(pid) {
  if (!pid) return { stop: () => undefined };
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rss)), 50);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, memoryOf(pid).rss);
    },
  };
}

/**
 * Asks the server for its live heap once a second; returns the peak seen.
 * @param {Server} server
 */
function sampleLiveHeap(server) {
  const liveHeapMb = server.liveHeapMb;
  if (!liveHeapMb) return { stop: async () => undefined };
  let peak = 0;
  /** @type {Promise<unknown>} */
  let pending = Promise.resolve();
  const timer = setInterval(() => {
    pending = pending.then(async () => (peak = Math.max(peak, await liveHeapMb())));
  }, 1000);
  return {
    stop: async () => {
      clearInterval(timer);
      await pending;
      return peak || undefined;
    },
  };
}

/**
 * The members as stream messages of `perMessage` ids, the audience named in the first.
 * @param {string} audienceId
 * @param {string[]} ids
 */
async function* membership(audienceId, ids) {
  for (let start = 0; start < ids.length; start += perMessage) {
    yield { audienceId: start === 0 ? audienceId : "", userIds: ids.slice(start, start + perMessage) };
  }
}

/**
 * Baseline: the raw cost of writing N text ids into a plain table, chunked as the staging is.
 * @param {string} databaseUrl
 * @param {string[]} ids
 */
async function baseline(databaseUrl, ids) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("CREATE TABLE bench_baseline (user_id text PRIMARY KEY)");
    const started = performance.now();
    for (let start = 0; start < ids.length; start += perMessage) {
      await client.query("INSERT INTO bench_baseline SELECT unnest($1::text[])", [ids.slice(start, start + perMessage)]);
    }
    const seconds = (performance.now() - started) / 1000;
    await client.query("DROP TABLE bench_baseline");
    return seconds;
  } finally {
    await client.end();
  }
}

/**
 * Baseline: the same N identify calls stored through ingestion's own
 * statement (storeMessages: messages and deliveries, 10,000 per statement),
 * payloads built in JS. What the first sync costs beyond storing its calls.
 * @param {string} databaseUrl
 * @param {string[]} ids
 * @param {string} sourceId
 */
async function baselineStore(databaseUrl, ids, sourceId) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const started = performance.now();
    for (let start = 0; start < ids.length; start += perMessage) {
      const receivedAt = new Date();
      const messages = ids.slice(start, start + perMessage).map((id) => {
        const call = emptyCall("identify");
        call.userId = id;
        call.traits = { baseline: true };
        const messageId = randomUUID();
        // Routed in the statement, as ingestion's are: to the source's one enabled destination.
        return { messageId, type: "identify", userId: id, payload: buildCallPayload(call, messageId, receivedAt), integrations: undefined };
      });
      await storeMessages(client, sourceId, receivedAt, messages);
    }
    return (performance.now() - started) / 1000;
  } finally {
    await client.end();
  }
}

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write("set DATABASE_URL to a Postgres server (a fresh database is created on it)\n");
  process.exit(2);
}
const dbName = `waypost_bench_audience_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const postgresVersion = (await admin.query("SHOW server_version")).rows[0].server_version;
await admin.end();
const dbUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString();

const external = process.env.WAYPOST_URL;
const localAdminToken = "bench-admin-token-0123456789";
const adminToken = external ? process.env.WAYPOST_ADMIN_TOKEN : localAdminToken;
/** @type {Server} */
const server = external ? { url: external, pid: undefined, stop: async () => {} } : await startServer(dbUrl, localAdminToken);
try {
  const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "2" });
  const headers = { authorization: `Bearer ${adminToken}` };
  const audiences = createClient(AudienceService, transport);
  const { source } = await createClient(SourceService, transport).createSource({ source: { name: "bench" } }, { headers });
  if (!source) throw new Error("CreateSource answered without a source");
  const { destination } = await createClient(DestinationService, transport).createDestination(
    { destination: { name: "hook", sourceIds: [source.id], webhooks: [{ url: "http://127.0.0.1:9/hook" }] } },
    { headers },
  );
  if (!destination) throw new Error("CreateDestination answered without a destination");
  const { audience } = await audiences.createAudience({ audience: { sourceId: source.id, name: "Bench Members" } }, { headers });
  if (!audience) throw new Error("CreateAudience answered without an audience");
  report({ scenario: "audience-environment", members, per_message: perMessage, node: process.version, postgres: postgresVersion });

  const first = Array.from({ length: members }, (_, i) => userId(i));
  const changed = Math.round(members * changedShare);
  // The later sync: the first `changed / 2` members leave, as many new ones join.
  const later = [...first.slice(changed / 2), ...Array.from({ length: changed / 2 }, (_, i) => userId(members + i))];

  /** @type {Array<[string, string[]]>} */
  const syncs = [
    ["audience-first-sync", first],
    ["audience-later-sync", later],
  ];
  for (const [scenario, ids] of syncs) {
    const idle = server.pid ? memoryOf(server.pid).rss : undefined;
    const idleHeap = server.liveHeapMb ? await server.liveHeapMb() : undefined;
    const rss = sampleRss(server.pid);
    const heap = sampleLiveHeap(server);
    const started = performance.now();
    const { counts } = await audiences.streamSyncAudience(membership(audience.id, ids), { headers, timeoutMs: 0 });
    if (!counts) throw new Error("SyncAudience answered without counts");
    const seconds = (performance.now() - started) / 1000;
    report({
      scenario,
      members: ids.length,
      seconds: Number(seconds.toFixed(2)),
      members_per_second: Math.round(ids.length / seconds),
      added: Number(counts.added),
      removed: Number(counts.removed),
      calls: Number(counts.calls),
      server_rss_before_mb: idle,
      server_peak_rss_mb: rss.stop(),
      server_live_heap_before_mb: idleHeap,
      server_peak_live_heap_mb: await heap.stop(),
    });
  }
  const baselineSeconds = await baseline(dbUrl, first);
  report({
    scenario: "audience-baseline-unnest-insert",
    rows: members,
    seconds: Number(baselineSeconds.toFixed(2)),
    rows_per_second: Math.round(members / baselineSeconds),
    note: "INSERT ... SELECT unnest($1::text[]) into a plain table with a text primary key, same chunk size",
  });
  const storeSeconds = await baselineStore(dbUrl, first, source.id);
  report({
    scenario: "audience-baseline-store-calls",
    calls: members,
    seconds: Number(storeSeconds.toFixed(2)),
    calls_per_second: Math.round(members / storeSeconds),
    note: "the same identify calls through ingestion's storeMessages (message + 1 delivery each), 10,000 per statement",
  });
} finally {
  await server.stop();
  const cleanup = new pg.Client({ connectionString: serverUrl });
  await cleanup.connect();
  await cleanup.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await cleanup.end();
}
process.exit(0);
