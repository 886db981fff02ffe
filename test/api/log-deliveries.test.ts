import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { AttemptOutcome, DeliveryOrder, DeliveryStatus, DeliveryView, Fate } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import {
  callsOnLog,
  putOnLog,
  start,
  writeBatch,
  writeBatchAttempt,
  writeCursor,
  writeFailedException,
  writeFate,
  type LogCall,
} from "../helpers/log-rows.js";
import type { TestServer } from "../helpers/server.js";

// What users see of a destination on the call log: the loader's rows
// (written here as it writes them) read as per-call deliveries. No delivery
// loop runs (role api): the rows are exactly the ones written.
const test = testWith({ server: { config: { role: "api" } } });

interface Scene {
  sourceId: string;
  logId: string;
  perCallId: string;
  /** c[0..5] in log order: delivered, filtered, failed alone, delivered, then two ahead of the cursor. */
  c: LogCall[];
  finishedAt: Date;
  batchId: string;
  exceptionId: string;
}

async function scene(server: TestServer): Promise<Scene> {
  const source = await server.createSource();
  const hook = { webhooks: [{ url: "https://warehouse.example/load" }] };
  const log = await server.createDestination({ name: "on the log", sourceIds: [source.id], ...hook });
  const perCall = await server.createDestination({ name: "per call", sourceIds: [source.id], ...hook });
  const tracking = server.tracking(source.writeKey);
  // One request each: six ingest transactions, six positions, six receive times.
  for (let i = 0; i < 6; i++) await tracking.track({ track: { userId: `u${i}`, event: `E${i}` } });
  await putOnLog(server.pool, log.id);
  const c = await callsOnLog(server.pool, source.id);
  const finishedAt = new Date(Date.now() - 1000);
  const at = { destinationId: log.id, sourceId: source.id };
  const batch = await writeBatch(server.pool, {
    ...at,
    from: start,
    to: { xid: c[3]!.xid, pk: c[3]!.pk },
    calls: 4,
    delivered: 2,
    finishedAt,
  });
  await writeCursor(server.pool, { ...at, after: { xid: c[3]!.xid, pk: c[3]!.pk } });
  await writeFate(server.pool, log.id, c[1]!.pk, "filter");
  const failure = await writeBatchAttempt(server.pool, {
    destinationId: log.id,
    attemptedAt: new Date(finishedAt.getTime() - 500),
    outcome: "permanent",
    calls: 3,
    deliveries: 1,
    error: "column too long",
  });
  const exceptionId = await writeFailedException(server.pool, { ...at, messagePk: c[2]!.pk, attempt: failure, finishedAt });
  // A batch row of the per-call destination is not what its deliveries are: its reads ignore it.
  await writeBatch(server.pool, {
    destinationId: perCall.id,
    sourceId: source.id,
    from: start,
    to: { xid: c[5]!.xid, pk: c[5]!.pk },
    calls: 6,
    delivered: 6,
    finishedAt,
  });
  return { sourceId: source.id, logId: log.id, perCallId: perCall.id, c, finishedAt, batchId: batch.batchId, exceptionId };
}

const derivedId = (s: Scene, i: number) => `${s.c[i]!.pk}@${s.logId}`;

async function listAll(server: TestServer, request: { destinationId?: string; pageSize: number; statuses?: DeliveryStatus[] }) {
  const all = [];
  let pageToken = "";
  // Bounded: a paging mistake that repeats a page fails the test instead of hanging it.
  for (let pages = 0; pages < 20; pages++) {
    const page = await server.deliveries.listDeliveries({ ...request, pageToken, view: DeliveryView.BASIC });
    all.push(...page.deliveries);
    pageToken = page.nextPageToken;
    if (pageToken === "") return all;
  }
  throw new Error(`more than 20 pages: ${all.map((d) => d.id).join(", ")}`);
}

let s: Scene;
test.beforeAll(async ({ server }) => {
  s = await scene(server);
});

test("a destination on the log lists a delivery per call, newest first, one order over pages of both kinds", async ({ server }) => {
  const expected = [
    { id: derivedId(s, 5), status: DeliveryStatus.PENDING, messageId: s.c[5]!.messageId },
    { id: derivedId(s, 4), status: DeliveryStatus.PENDING, messageId: s.c[4]!.messageId },
    { id: derivedId(s, 3), status: DeliveryStatus.DELIVERED, messageId: s.c[3]!.messageId },
    { id: s.exceptionId, status: DeliveryStatus.FAILED, messageId: s.c[2]!.messageId },
    // c[1] was filtered: a fate, not a delivery.
    { id: derivedId(s, 0), status: DeliveryStatus.DELIVERED, messageId: s.c[0]!.messageId },
  ];
  for (const pageSize of [1, 2, 50]) {
    const listed = await listAll(server, { destinationId: s.logId, pageSize });
    expect(listed.map((d) => ({ id: d.id, status: d.status, messageId: d.messageId }))).toEqual(expected);
  }
  const delivered = await listAll(server, { destinationId: s.logId, pageSize: 1, statuses: [DeliveryStatus.DELIVERED] });
  expect(delivered.map((d) => d.id)).toEqual([derivedId(s, 3), derivedId(s, 0)]);
  const failed = await listAll(server, { destinationId: s.logId, pageSize: 10, statuses: [DeliveryStatus.FAILED] });
  expect(failed.map((d) => d.id)).toEqual([s.exceptionId]);
  // By message, without a destination: the call's delivery at each destination.
  const byMessage = await server.deliveries.listDeliveries({ messageId: s.c[0]!.messageId });
  expect(byMessage.deliveries.map((d) => d.destinationId).sort()).toEqual([s.logId, s.perCallId].sort());
});

test("a per-call destination's deliveries are its rows only", async ({ server }) => {
  const listed = await listAll(server, { destinationId: s.perCallId, pageSize: 4 });
  expect(listed).toHaveLength(6);
  expect(listed.every((d) => /^\d+$/.test(d.id) && d.status === DeliveryStatus.PENDING)).toBe(true);
  const one = await server.deliveries.getDelivery({ id: listed[0]!.id });
  expect(one.delivery).toMatchObject({ status: DeliveryStatus.PENDING, attempts: [] });
  await expect(server.deliveries.getDelivery({ id: `${s.c[0]!.pk}@${s.perCallId}` })).rejects.toMatchObject({ code: Code.NotFound });
});

test("GetDelivery: a delivered call's delivery, with its batch's attempt as attempt 1", async ({ server }) => {
  const { delivery } = await server.deliveries.getDelivery({ id: derivedId(s, 0) });
  expect(delivery).toMatchObject({
    id: derivedId(s, 0),
    destinationId: s.logId,
    sourceId: s.sourceId,
    messageId: s.c[0]!.messageId,
    status: DeliveryStatus.DELIVERED,
    attemptCount: 1,
    userId: "u0",
  });
  expect(Number(delivery!.finalizeTime!.seconds)).toBe(Math.floor(s.finishedAt.getTime() / 1000));
  expect(JSON.parse(delivery!.body)).toMatchObject({ messageId: s.c[0]!.messageId, event: "E0" });
  expect(delivery!.attempts).toHaveLength(1);
  expect(delivery!.attempts[0]).toMatchObject({ attempt: 1, outcome: AttemptOutcome.SUCCESS, batchId: s.batchId, batchCalls: 2 });

  const pending = (await server.deliveries.getDelivery({ id: derivedId(s, 4) })).delivery!;
  expect(pending).toMatchObject({ status: DeliveryStatus.PENDING, attemptCount: 0, attempts: [] });
  // Held back (a fate) or failed alone (its own row): no derived delivery.
  for (const i of [1, 2]) {
    await expect(server.deliveries.getDelivery({ id: derivedId(s, i) })).rejects.toMatchObject({ code: Code.NotFound });
  }
  const retry = server.deliveries.retryDelivery({ id: derivedId(s, 0) });
  await expect(retry).rejects.toBeInstanceOf(ConnectError);
  await expect(retry).rejects.toMatchObject({ code: Code.FailedPrecondition });
});

test("ExplainMessage: delivered, filtered, failed and pending at the log destination", async ({ server }) => {
  const fates = [];
  for (const call of s.c) {
    const explained = await server.deliveries.explainMessage({ messageId: call.messageId });
    const at = explained.destinations.find((d) => d.destinationId === s.logId)!;
    fates.push({ fate: at.fate, reason: at.reason, deliveryId: at.deliveryId });
  }
  expect(fates).toEqual([
    { fate: Fate.DELIVERED, reason: "", deliveryId: derivedId(s, 0) },
    { fate: Fate.FILTERED, reason: "filter", deliveryId: "" },
    { fate: Fate.FAILED, reason: expect.any(String), deliveryId: s.exceptionId },
    { fate: Fate.DELIVERED, reason: "", deliveryId: derivedId(s, 3) },
    { fate: Fate.PENDING, reason: "", deliveryId: derivedId(s, 4) },
    { fate: Fate.PENDING, reason: "", deliveryId: derivedId(s, 5) },
  ]);
});

test("stats count the batches' deliveries by the minute they finished, and the calls still ahead", async ({ server }) => {
  const stats = await server.deliveries.getDestinationStats({ destinationId: s.logId });
  expect({ delivered: stats.delivered, failed: stats.failed, pending: stats.pending, backlog: stats.backlog }).toEqual({
    delivered: 2n,
    failed: 1n,
    pending: 2n,
    backlog: 2n,
  });
  expect(stats.deliveredLastHour).toBe(2n);
  const minute = Math.floor(s.finishedAt.getTime() / 60_000) * 60;
  const inMinute = stats.series.find((m) => Number(m.startTime!.seconds) === minute);
  expect(inMinute?.delivered).toBe(2n);
  // The batch attempt rows as today: the success stands for its 2 calls, the failure for its 1.
  expect({ attempts: stats.attemptsLastHour, successes: stats.successfulAttemptsLastHour }).toEqual({ attempts: 3n, successes: 2n });
  const perCall = await server.deliveries.getDestinationStats({ destinationId: s.perCallId });
  expect({ delivered: perCall.delivered, pending: perCall.pending }).toEqual({ delivered: 0n, pending: 6n });
});

test("the finish feed: a batch's delivered calls finish with it, once, in its transaction's order", async ({ server }) => {
  const first = await server.deliveries.listDeliveries({ order: DeliveryOrder.FINISH_TIME_DESC, destinationId: s.logId });
  expect(first.deliveries.map((d) => d.id).sort()).toEqual([derivedId(s, 0), derivedId(s, 3), s.exceptionId].sort());
  // The next batch delivers c[4] and c[5]; the cursor moves past them.
  const at = { destinationId: s.logId, sourceId: s.sourceId };
  const to = { xid: s.c[5]!.xid, pk: s.c[5]!.pk };
  await writeBatch(server.pool, { ...at, from: { xid: s.c[3]!.xid, pk: s.c[3]!.pk }, to, calls: 2, delivered: 2, finishedAt: new Date() });
  await writeCursor(server.pool, { ...at, after: to });
  const seen: string[] = [];
  let pageToken = first.nextPageToken;
  for (let i = 0; i < 3; i++) {
    const page = await server.deliveries.listDeliveries({
      order: DeliveryOrder.FINISH_TIME_DESC,
      destinationId: s.logId,
      pageToken,
      pageSize: 1,
    });
    seen.push(...page.deliveries.map((d) => d.id));
    pageToken = page.nextPageToken;
  }
  expect(seen).toEqual([derivedId(s, 4), derivedId(s, 5)]);
  const stats = await server.deliveries.getDestinationStats({ destinationId: s.logId });
  expect({ delivered: stats.delivered, pending: stats.pending }).toEqual({ delivered: 4n, pending: 0n });
});

test("a cursor whose head batch keeps failing: its calls are retrying, with its error", async ({ server }) => {
  const source = await server.createSource();
  const log = await server.createDestination({ name: "failing log", sourceIds: [source.id], webhooks: [{ url: "https://w.example/" }] });
  await server.tracking(source.writeKey).track({ track: { userId: "u9", event: "E9" } });
  await putOnLog(server.pool, log.id);
  const [call] = await callsOnLog(server.pool, source.id);
  await writeCursor(server.pool, { destinationId: log.id, sourceId: source.id, after: start, failures: 3, lastError: "warehouse down" });
  const { delivery } = await server.deliveries.getDelivery({ id: `${call!.pk}@${log.id}` });
  expect(delivery).toMatchObject({ status: DeliveryStatus.RETRYING, attemptCount: 3, lastError: "warehouse down" });
  const explained = await server.deliveries.explainMessage({ messageId: call!.messageId });
  expect(explained.destinations.find((d) => d.destinationId === log.id)).toMatchObject({ fate: Fate.RETRYING, attemptCount: 3 });
});
