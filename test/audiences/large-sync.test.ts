import v8 from "node:v8";
import vm from "node:vm";
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import type { StreamSyncAudienceRequest } from "../../gen/waypost/v1/audience_pb.js";
import { rowsPerChunk } from "../../src/audiences/member-chunks.js";
import { testWith } from "../helpers/fixtures.js";
import { audienceClient, clearMessages, countRows, createAudience } from "./support.js";

// The streaming RPC at size (50,000 members) and when the client goes away.
// The server runs in this process, so the test watches what it sends to
// Postgres (every statement on the staging table) and what stays alive in
// the heap.

const test = testWith();
const stageWatch = { rows: 0, largestStatement: 0, statements: 0, drops: 0, changed: () => {} };
const originalQuery = pg.Client.prototype.query;

beforeAll(async () => {
  // Every staging INSERT the server makes, with the number of user ids in it.
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const result = (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
    const [text, params] = args as [unknown, unknown[] | undefined];
    if (typeof text === "string" && /^DROP TABLE IF EXISTS pg_temp\.waypost_audience_stage/.test(text)) {
      void (result as Promise<unknown>).finally(() => {
        stageWatch.drops++;
        stageWatch.changed();
      });
    }
    if (typeof text === "string" && /^\s*INSERT INTO pg_temp\.waypost_audience_stage/.test(text)) {
      const rows = (params?.[0] as string[] | undefined)?.length ?? 0;
      void (result as Promise<unknown>).then(() => {
        stageWatch.rows += rows;
        stageWatch.statements++;
        stageWatch.largestStatement = Math.max(stageWatch.largestStatement, rows);
        stageWatch.changed();
      });
    }
    return result;
  } as typeof originalQuery;
});
afterAll(async () => {
  pg.Client.prototype.query = originalQuery;
});

const members = 50_000;
const perMessage = 1_000;
/** Long ids, so that holding the whole list (~25 MB of ids) would show in the heap. */
const userId = (n: number) => `user-${String(n).padStart(7, "0")}-`.padEnd(500, "x");

/**
 * Resolves once the watch satisfies `done`. A server that waits for the
 * whole stream before staging never gets there: fail with a clear message
 * instead of the test's timeout.
 */
function watchUntil(done: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not ${what} within 30 s`)), 30_000);
    const check = () => {
      if (done()) {
        clearTimeout(timer);
        stageWatch.changed = () => {};
        resolve();
      }
    };
    stageWatch.changed = check;
    check();
  });
}

const stagedAtLeast = (rows: number) => watchUntil(() => stageWatch.rows >= rows, `stage ${rows} rows before asking for the next message`);

/**
 * The membership as stream messages, made on demand. Message k+1 is only
 * produced after the server has staged messages 1..k in Postgres: a server
 * that collected the stream before writing it would never get message k+1,
 * and the test would time out.
 */
async function* membership(
  audienceId: string,
  ids: (i: number) => string,
  heapSamples: number[] = [],
): AsyncGenerator<StreamSyncAudienceRequest> {
  const base = stageWatch.rows;
  for (let start = 0, k = 0; start < members; start += perMessage, k++) {
    await stagedAtLeast(base + k * perMessage);
    // Every 5th message: what the process (server and client) keeps alive mid-sync.
    if (k % 5 === 0) heapSamples.push(liveHeapMb());
    const userIds = Array.from({ length: perMessage }, (_, i) => ids(start + i));
    yield { audienceId: start === 0 ? audienceId : "", userIds } as StreamSyncAudienceRequest;
  }
}

// A full collection on demand (the flag is read when gc is first looked up),
// so the heap measured is what is live, not garbage awaiting collection.
v8.setFlagsFromString("--expose-gc");
const collectGarbage = vm.runInNewContext("gc") as () => void;

/** Live heap after a full collection, in MB. */
function liveHeapMb(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

test("50,000 members stream through in chunks, staged as they arrive, with flat memory", async ({ server }) => {
  const source = await server.createSource();
  const disabled = await server.createDestination({
    name: "paused",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/hook" }],
    enabled: false,
  });
  const audience = await createAudience(server, source.id, "Everyone");
  const client = audienceClient(server);

  const baseline = liveHeapMb();
  const samples: number[] = [];
  const first = await client.streamSyncAudience(membership(audience.id, userId, samples));
  expect(first.counts).toMatchObject({ added: BigInt(members), removed: 0n, calls: BigInt(members) });
  expect(stageWatch.rows).toBe(members);
  expect(stageWatch.statements).toBe(members / perMessage);
  expect(stageWatch.largestStatement).toBeLessThanOrEqual(rowsPerChunk);
  // The ids alone are 25 MB (500 one-byte characters each); a server that
  // held the membership would keep at least that alive by the last samples.
  // Streaming keeps about one message (0.5 MB) live.
  const grownMb = Math.max(...samples) - baseline;
  console.log(`live heap: baseline ${baseline.toFixed(1)} MB, samples ${samples.map((s) => s.toFixed(1)).join(" ")}`);
  expect(samples).toHaveLength(members / perMessage / 5);
  expect(grownMb).toBeLessThan(8);

  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1 AND type = 'identify'", [source.id])).toBe(members);
  expect(await countRows(server, "SELECT 1 FROM deliveries WHERE destination_id = $1", [disabled.id])).toBe(0);
  expect(await countRows(server, "SELECT 1 FROM audience_members WHERE audience_id = $1", [audience.id])).toBe(members);

  // 1% changed: the first 250 leave, 250 new ones join.
  await clearMessages(server, source.id);
  const shifted = (n: number) => userId(n + 250);
  const second = await client.streamSyncAudience(membership(audience.id, shifted));
  expect(second.counts).toMatchObject({
    added: 250n,
    removed: 250n,
    unchanged: BigInt(members - 250),
    calls: 500n,
  });
  const sent = await server.pool.query<{ user_id: string; value: boolean }>(
    `SELECT user_id, (payload::jsonb -> 'traits' ->> 'everyone')::boolean AS value FROM messages WHERE source_id = $1`,
    [source.id],
  );
  expect(sent.rows.filter((r) => r.value)).toHaveLength(250);
  expect(
    sent.rows
      .filter((r) => !r.value)
      .map((r) => r.user_id)
      .sort(),
  ).toEqual(Array.from({ length: 250 }, (_, i) => userId(i)));
}, 120_000);

test("a client that goes away mid-stream applies nothing, and the server cleans up", async ({ server }) => {
  const source = await server.createSource();
  const audience = await createAudience(server, source.id, "Aborted");
  const client = audienceClient(server);
  await client.syncAudience({ audienceId: audience.id, userIds: ["kept"] });
  await clearMessages(server, source.id);

  const controller = new AbortController();
  const rowsBefore = stageWatch.rows;
  const dropsBefore = stageWatch.drops;
  async function* halfAStream(): AsyncGenerator<StreamSyncAudienceRequest> {
    yield { audienceId: audience.id, userIds: ["a", "b"] } as StreamSyncAudienceRequest;
    await stagedAtLeast(rowsBefore + 2);
    controller.abort();
    // Never ends the stream: ending it would mean "this is the whole membership".
    await new Promise(() => {});
  }
  await expect(client.streamSyncAudience(halfAStream(), { signal: controller.signal })).rejects.toThrow();
  // The stage is dropped when the server gives up (one DROP on creation, one after).
  await watchUntil(() => stageWatch.drops >= dropsBefore + 2, "drop the stage after the client left");

  expect(await countRows(server, "SELECT 1 FROM messages WHERE source_id = $1", [source.id])).toBe(0);
  const members = await server.pool.query("SELECT user_id FROM audience_members WHERE audience_id = $1", [audience.id]);
  expect(members.rows).toEqual([{ user_id: "kept" }]);
});
