import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import pg from "pg";
import { afterEach, expect } from "vitest";
import { claimDeliveries, singleNodeJobTable, type ClaimedDelivery, type DeliveryCompletion } from "../../src/db/job-table/index.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { storeMessages } from "../../src/db/job-table/store-messages.js";
import { createCompletionWriter, isRowError } from "../../src/delivery/completion-writer.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, serverUrl } from "../helpers/database.js";
import { testWith } from "../helpers/fixtures.js";
import { deleteMessages, seedSourceAndDestination } from "../helpers/job-table-fixtures.js";
import { startReceiver } from "../helpers/receiver.js";
import { startTestServer } from "../helpers/server.js";

const minute = 60_000;
const t0 = new Date("2026-11-01T00:00:00Z");
let pool: Pool;
let logs: Array<Record<string, unknown>>;
let logger: ReturnType<typeof createLogger>;
let sourceId: string;

/** A logger whose lines the test reads. */
function capture(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>>; stream: PassThrough } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  let rest = "";
  stream.on("data", (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split("\n");
    rest = parts.pop()!;
    for (const part of parts) if (part) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  return { logger: createLogger("debug", stream), lines, stream };
}

/** Takes the test database away: no new connections, the open ones cut. */
async function outage(name: string): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [name]);
  return async () => {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await admin.end();
  };
}

/** Polls a condition of the logs: the writer's retries give no event to await. */
async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Each test's pool logs to the test's own capture, so it is the test's, on the file's database.
const test = testWith();
test.beforeEach(async ({ database }) => {
  ({ logger, lines: logs } = capture());
  pool = createPool({ connectionString: database.url, logger });
  await deleteMessages(pool);
  ({ sourceId } = await seedSourceAndDestination(pool, t0));
});
afterEach(async () => {
  await pool.end();
});

/** n deliveries, claimed (leased to this test) as the delivery loop would. */
async function claimed(n: number): Promise<ClaimedDelivery[]> {
  const calls = Array.from({ length: n }, () => {
    const messageId = randomUUID();
    return { messageId, type: "track" as const, userId: "u", payload: JSON.stringify({ messageId }), integrations: undefined };
  });
  await storeMessages(pool, sourceId, t0, calls);
  return (await claimDeliveries(pool, { now: t0, limit: n, perDestinationLimit: n, room: new Map(), leaseMs: minute, owner: "test" }))
    .deliveries;
}

function delivered(job: ClaimedDelivery): DeliveryCompletion {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: "delivered",
    runAt: t0,
    attempted: true,
    attemptedAt: t0,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: "https://example.com/hook",
        attemptedAt: t0,
        outcome: "success",
        statusCode: 200,
        error: null,
        latencyMs: 5,
        responseBody: null,
      },
    ],
  };
}

test("a row the database refuses is isolated: the rest of its batch and later results are written, the refusal is recorded", async () => {
  const jobs = await claimed(20);
  const poison = jobs[7]!;
  // A trigger stands in for any row-level refusal (a constraint, bad data).
  await pool.query(`CREATE TABLE poison (id bigint PRIMARY KEY)`);
  await pool.query(`INSERT INTO poison VALUES ($1)`, [poison.id]);
  await pool.query(`
    CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'delivered' AND NEW.id IN (SELECT id FROM poison) THEN
        RAISE EXCEPTION 'this row is refused by the test';
      END IF;
      RETURN NEW;
    END $$`);
  await pool.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON delivery_history FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
  try {
    const written: string[] = [];
    const writer = createCompletionWriter({
      pool,
      jobTable: singleNodeJobTable,
      logger,
      onWritten: (done) => written.push(...done.filter((c) => c.status === "delivered").map((c) => c.id)),
      retryInitialMs: 60_000,
      refusals: { retryDelayMs: minute, clock: { now: () => t0 } },
    });
    for (const job of jobs) writer.add(delivered(job));
    await writer.flush();
    expect(written.sort()).toEqual(
      jobs
        .filter((j) => j !== poison)
        .map((j) => j.id)
        .sort(),
    );

    const rows = await pool.query<{
      id: string;
      status: string;
      leased_until: Date | null;
      run_at: Date;
      refused_completions: number;
      last_error: string | null;
    }>("SELECT id, status, leased_until, run_at, refused_completions, last_error FROM deliveries");
    const byId = new Map(rows.rows.map((r) => [r.id, r]));
    for (const job of jobs) expect(byId.get(job.id)!.status).toBe(job === poison ? "pending" : "delivered");
    // The poison's refusal is counted with the error, its lease ended, and it is due again a retry delay later.
    expect(byId.get(poison.id)).toMatchObject({ leased_until: null, run_at: new Date(t0.getTime() + minute), refused_completions: 1 });
    expect(byId.get(poison.id)!.last_error).toContain("this row is refused by the test");
    const refusal = logs.find((line) => line.deliveryId === poison.id);
    expect(refusal?.msg).toContain("refused this delivery's result");
    expect(JSON.stringify(refusal?.err)).toContain("this row is refused by the test");

    // Results behind it are not blocked.
    const [later] = await claimed(1);
    writer.add(delivered(later!));
    await writer.flush();
    expect(written).toContain(later!.id);
  } finally {
    await pool.query("DROP TRIGGER refuse_poison ON delivery_history");
  }
});

test("during an outage the writer backs off, doubling, and close() ends by its deadline, dropping what is unwritten", async ({
  database,
}) => {
  const jobs = await claimed(3);
  const restore = await outage(database.name);
  try {
    const writer = createCompletionWriter({ pool, jobTable: singleNodeJobTable, logger, retryInitialMs: 100, retryMaxMs: 400 });
    for (const job of jobs) writer.add(delivered(job));
    const retries = () => logs.filter((l) => l.msg === "writing delivery results failed; retrying");
    await until(() => retries().length >= 4);
    // The database is still away: close() returns only because its deadline passed (logged below).
    await writer.close(500);
    const waits = retries().map((l) => l.retryInMs);
    expect(waits.slice(0, 4)).toEqual([100, 200, 400, 400]);
    const dropped = logs.find((l) => typeof l.msg === "string" && l.msg.startsWith("shutdown deadline passed"));
    expect(dropped).toMatchObject({ count: 3, deadlineMs: 500 });
  } finally {
    await restore();
  }
});

test("connection and schema failures retry; refusals of a row (a data-class SQLSTATE) isolate it", () => {
  expect(isRowError(Object.assign(new Error("x"), { code: "23505" }))).toBe(true);
  expect(isRowError(Object.assign(new Error("x"), { code: "P0001" }))).toBe(true);
  expect(isRowError(Object.assign(new Error("x"), { code: "22P02" }))).toBe(true);
  expect(isRowError(Object.assign(new Error("x"), { code: "57P01" }))).toBe(false);
  expect(isRowError(Object.assign(new Error("x"), { code: "08006" }))).toBe(false);
  expect(isRowError(Object.assign(new Error("x"), { code: "55000" }))).toBe(false);
  expect(isRowError(Object.assign(new Error("x"), { code: "40001" }))).toBe(false);
  // A schema or permission problem hits every row: dropping them one by one would be wrong.
  expect(isRowError(Object.assign(new Error("x"), { code: "42501" }))).toBe(false);
  expect(isRowError(Object.assign(new Error("x"), { code: "42P01" }))).toBe(false);
  expect(isRowError(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(false);
  expect(isRowError(new Error("Connection terminated unexpectedly"))).toBe(false);
});

test("a server stopped during a database outage ends within its shutdown deadline; idle connections lost are logged", async () => {
  const { lines, stream } = capture();
  let release!: () => void;
  const answered = new Promise<void>((resolve) => (release = resolve));
  const receiver = await startReceiver({ respond: () => ({ status: 200, after: answered }) });
  const own = await createTestDatabase();
  const server = await startTestServer({ database: own, logStream: stream, config: { delivery: { shutdownTimeoutMs: 1_500 } } });
  let restore: (() => Promise<void>) | undefined;
  try {
    const source = await server.createSource();
    await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    const arrived = receiver.waitForRequests(1);
    await server.tracking(source.writeKey).track({ track: { userId: "u", event: "during the outage" } });
    await arrived;
    restore = await outage(own.name);
    release(); // the endpoint answers; its result cannot be written
    // The database is still away: the stop ends because its deadline passed (logged below).
    await server.stopService();
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    expect(text).toContain("shutdown deadline passed: dropped unwritten delivery results");
    expect(text).toContain("an idle database connection failed");
  } finally {
    release();
    await restore?.();
    await server.stop().catch(() => {});
    await own.drop();
    await receiver.close();
  }
}, 30_000);
