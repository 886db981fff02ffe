import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import type pg from "pg";
import { eventually, startServiceProcess, type ServiceProcess } from "../../helpers/process.js";
import type { testWith } from "../../helpers/fixtures.js";
import { type ReceivedRequest, type Receiver, type Responder, startReceiver } from "../../helpers/receiver.js";
import type { TestServer } from "../../helpers/server.js";

/** The calls of a batched webhook's POST, in the order it carried them. */
export const callsIn = (request: ReceivedRequest): Array<{ messageId: string; userId?: string }> => JSON.parse(request.body).batch;

/** A track call as the tracking API takes it in a batch. */
export const trackCall = (messageId: string, userId = `u-${messageId}`) => ({
  type: { case: "track" as const, value: { messageId, userId, event: "E" } },
});

/**
 * Worker processes (`node dist/server.js`, role worker, the call log on) on
 * the file's database, and receivers: after each test the workers are
 * killed (then `afterKill` runs) and the receivers closed.
 */
export function workerProcesses(test: ReturnType<typeof testWith>, afterKill: () => Promise<void> = async () => {}) {
  let databaseUrl = "";
  const started: ServiceProcess[] = [];
  const receivers: Receiver[] = [];
  test.beforeAll(({ database }) => {
    databaseUrl = database.url;
  });
  test.afterEach(async () => {
    for (const p of started.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
      await p.exited;
    }
    await afterKill();
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  return {
    async start(env: Record<string, string> = {}): Promise<ServiceProcess> {
      const p = await startServiceProcess(databaseUrl, { WAYPOST_ROLE: "worker", WAYPOST_CALL_LOG: "on", ...env });
      started.push(p);
      return p;
    },
    /** A receiver closed after the test. */
    async receiver(respond?: Responder): Promise<Receiver> {
      const receiver = await startReceiver(respond ? { respond } : {});
      receivers.push(receiver);
      return receiver;
    },
  };
}

/** Waits until the destination is on the log and has a live cursor per source (a worker moved it at its start). */
export async function onTheLog(pool: pg.Pool, destinationId: string, sources = 1): Promise<void> {
  await eventually(async () => {
    const result = await pool.query<{ n: number }>(
      `SELECT count(c.*)::int AS n FROM destinations d JOIN log_cursors c ON c.destination_id = d.id
        WHERE d.id = $1 AND d.delivery_layout = 'log'`,
      [destinationId],
    );
    return result.rows[0]!.n >= sources;
  });
}

/** Calls the log's batches of a destination say were delivered. */
export async function deliveredOnLog(pool: pg.Pool, destinationId: string): Promise<number> {
  const result = await pool.query<{ n: number }>(
    "SELECT coalesce(sum(delivered), 0)::int AS n FROM log_batches WHERE destination_id = $1",
    [destinationId],
  );
  return result.rows[0]!.n;
}

/** How often each message id arrived, over every POST. */
export function arrivals(requests: readonly ReceivedRequest[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) for (const c of callsIn(r)) counts.set(c.messageId, (counts.get(c.messageId) ?? 0) + 1);
  return counts;
}

/**
 * Repeats must be whole batches: every POST whose webhook-id was seen before
 * carries exactly the calls of the first POST with that id, and no call
 * arrives in two POSTs of different ids. Returns the problems found (none: []).
 */
export function repeatsAreWholeBatches(requests: readonly ReceivedRequest[]): string[] {
  const byId = new Map<string, string>();
  const idOfCall = new Map<string, string>();
  const problems: string[] = [];
  for (const r of requests) {
    const id = String(r.headers["webhook-id"]);
    const calls = callsIn(r).map((c) => c.messageId);
    const key = calls.join(",");
    const first = byId.get(id);
    if (first !== undefined && first !== key) problems.push(`webhook-id ${id} repeated with other calls`);
    byId.set(id, first ?? key);
    for (const call of calls) {
      const other = idOfCall.get(call);
      if (other !== undefined && other !== id) problems.push(`${call} arrived in batches ${other} and ${id}`);
      idOfCall.set(call, id);
    }
  }
  return problems;
}

/**
 * The local ports of a process's TCP connections to `remotePort`: its
 * sockets (from /proc/<pid>/fd) matched to the TCP table by inode.
 */
export function localPortsOf(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ["tcp", "tcp6"]) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      const [local, remote, inode] = [fields[1]!, fields[2]!, fields[9]!];
      if (inodes.has(inode) && Number.parseInt(remote.split(":").at(-1)!, 16) === remotePort) {
        ports.push(Number.parseInt(local.split(":").at(-1)!, 16));
      }
    }
  }
  return ports;
}

/**
 * The Postgres backends of a child process's connections: pg_stat_activity
 * shows their local ports as client_port. Every pool in the service names
 * itself "waypost", so the name cannot tell two processes apart.
 */
export async function backendsOf(pool: pg.Pool, pid: number): Promise<number[]> {
  // The server's port as the pool connects to it: 5432, or the embedded Postgres's own (CI without a server).
  const url = (pool as pg.Pool & { options: { connectionString?: string } }).options.connectionString;
  const serverPort = Number((url && new URL(url).port) || 5432);
  const ports = localPortsOf(pid, serverPort);
  if (ports.length === 0) return [];
  const result = await pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND client_port = ANY($1::int[])",
    [ports],
  );
  return result.rows.map((row) => row.pid);
}

/** A signing secret: a batched webhook sends a webhook-id only when it signs. */
export const signingSecret = `whsec_${randomBytes(32).toString("base64")}`;

/**
 * A batched webhook destination for `sourceIds` at `url`, signed (its POSTs
 * carry a webhook-id). Its batches wait 50 ms for more calls: the loader
 * sends a page of fewer than `maxCalls` once its first call is that old.
 */
export function createBatchedWebhook(server: TestServer, sourceIds: string[], url: string, maxCalls = 50, extra: object = {}) {
  return server.createDestination({
    name: `batched-${Math.random().toString(36).slice(2, 8)}`,
    sourceIds,
    webhooks: [{ url, batch: { maxCalls, maxWaitMs: 50 } }],
    signingSecrets: [signingSecret],
    ...extra,
  });
}

/**
 * For each stored call of the destination's sources, how many of its
 * log_batches cover it (the membership rule of docs/job-table.md's call
 * log): 1 for a call delivered once by the log, 0 for one not (yet) on it.
 */
export async function batchesPerCall(pool: pg.Pool, destinationId: string): Promise<Map<string, number>> {
  const result = await pool.query<{ message_id: string; batches: number }>(
    `SELECT m.message_id, count(b.*)::int AS batches
       FROM destination_sources ds JOIN messages m ON m.source_id = ds.source_id
       LEFT JOIN log_batches b ON b.destination_id = ds.destination_id AND b.source_id = m.source_id
        AND NOT pg_visible_in_snapshot(m.log_xid, b.seen) AND pg_visible_in_snapshot(m.log_xid, b.up_to)
        AND (b.from_xid, b.from_id) < (m.log_xid, m.id) AND (m.log_xid, m.id) <= (b.to_xid, b.to_id)
      WHERE ds.destination_id = $1
      GROUP BY m.message_id`,
    [destinationId],
  );
  return new Map(result.rows.map((row) => [row.message_id, row.batches]));
}
