// @ts-check
// The identity scenario's load: Batch RPCs whose calls carry identifiers the
// stored graph knows and new ones, so the resolver reads the graph, links,
// creates and merges; and GetProfile probes at a steady rate.
import { fork } from "node:child_process";
import http2 from "node:http2";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BatchRequestSchema, BatchResponseSchema } from "../../dist/gen/waypost/v1/tracking_pb.js";
import { anonymousOnlyId, identifierWidth, knownUserAnonymousId, knownUserId } from "./identity-graph.mjs";

/**
 * The calls of every Batch of 100, in order (what each does to the graph):
 * - `known`: 50 tracks of known users (userId and their anonymousId): found, no change;
 * - `anonymousOnly`: 10 tracks of anonymous-only visitors already stored: found;
 * - `visitor`: 20 tracks of 5 new visitors (4 each, one new anonymousId each): 5 profiles made;
 * - `signUp`: 5 identifies of those visitors with a new userId: linked to the visitor's profile;
 * - `login`: 5 identifies of a stored anonymous-only visitor with a known userId: two stored profiles merged;
 * - `newDevice`: 5 identifies of a known userId on a new anonymousId: linked;
 * - `knownIdentify`: 5 identifies of known users (userId and their anonymousId) with traits: traits set.
 * Stored identifiers are picked uniformly (no locality: the graph's worst case for its caches).
 */
export const batchMix = /** @type {const} */ ({
  known: 50,
  anonymousOnly: 10,
  visitor: 20,
  signUp: 5,
  login: 5,
  newDevice: 5,
  knownIdentify: 5,
});
export const batchSize = Object.values(batchMix).reduce((a, b) => a + b, 0);
/** New visitors per batch: `visitor` calls go to them in turn, and each `signUp` is one of them. */
export const visitorsPerBatch = 5;

/** @typedef {keyof typeof batchMix} Kind */

const messagePlaceholder = "@".repeat(24);
const token = (/** @type {string} */ field, /** @type {number} */ slot) =>
  `~${field}${String(slot).padStart(3, "0")}`.padEnd(identifierWidth, "~");

/** New identifiers and messageIds: unique within this process (whatever the client), and across processes by a random prefix. */
let fresh = 0;
let sequence = 0;
const freshPrefix = Math.floor(Math.random() * 36 ** 4)
  .toString(36)
  .padStart(4, "0");
const freshId = (/** @type {string} */ letter) =>
  `${letter}${freshPrefix}${(++fresh).toString(36).padStart(identifierWidth - 5, "0")}`.slice(0, identifierWidth);

/**
 * The values a batch writes into its calls' userId and anonymousId (undefined: the call has none).
 * @param {import("./identity-graph.mjs").GraphShape} shape
 * @returns {() => Array<{ userId: string | undefined, anonymousId: string | undefined }>}
 */
export function batchIdentifiers(shape) {
  const user = () => 1 + Math.floor(Math.random() * shape.users);
  const anonymousOnly = () => 1 + Math.floor(Math.random() * shape.anonymousOnly);
  return () => {
    const visitors = Array.from({ length: visitorsPerBatch }, () => freshId("n"));
    /** @type {Array<{ userId: string | undefined, anonymousId: string | undefined }>} */
    const out = [];
    for (const [kind, count] of /** @type {Array<[Kind, number]>} */ (Object.entries(batchMix))) {
      for (let n = 0; n < count; n++) {
        if (kind === "known" || kind === "knownIdentify") {
          const i = user();
          out.push({ userId: knownUserId(i), anonymousId: knownUserAnonymousId(i) });
        } else if (kind === "anonymousOnly") out.push({ userId: undefined, anonymousId: anonymousOnlyId(anonymousOnly()) });
        else if (kind === "visitor") out.push({ userId: undefined, anonymousId: visitors[n % visitorsPerBatch] });
        else if (kind === "signUp") out.push({ userId: freshId("v"), anonymousId: visitors[n % visitorsPerBatch] });
        else if (kind === "login") out.push({ userId: knownUserId(user()), anonymousId: anonymousOnlyId(anonymousOnly()) });
        else out.push({ userId: knownUserId(user()), anonymousId: freshId("d") });
      }
    }
    return out;
  };
}

/**
 * A TrackingService client over HTTP/2 (Connect, binary protobuf) as load.mjs's,
 * sending the batch of `batchMix`: one template encoded once, then fresh
 * messageIds and identifiers written into a copy of its bytes per request
 * (every identifier is `identifierWidth` characters).
 * @param {string} baseUrl
 * @param {string} writeKey
 * @param {import("./identity-graph.mjs").GraphShape} shape
 */
export function identityClient(baseUrl, writeKey, shape) {
  const session = http2.connect(baseUrl);
  session.on("error", () => {});
  const kinds = /** @type {Array<[Kind, number]>} */ (Object.entries(batchMix)).flatMap(([kind, count]) =>
    Array.from({ length: count }, () => kind),
  );
  const batch = create(BatchRequestSchema, {
    batch: kinds.map((kind, slot) => {
      const anonymousId = token("A", slot);
      const userId = kind === "anonymousOnly" || kind === "visitor" ? "" : token("U", slot);
      const context = { ip: "203.0.113.9", library: { name: "analytics.js", version: "5.2.0" } };
      if (kind === "signUp" || kind === "login" || kind === "newDevice" || kind === "knownIdentify") {
        return {
          type: {
            case: /** @type {const} */ ("identify"),
            value: { messageId: messagePlaceholder, userId, anonymousId, traits: { email: "someone@example.com", plan: "pro" }, context },
          },
        };
      }
      return {
        type: {
          case: /** @type {const} */ ("track"),
          value: {
            messageId: messagePlaceholder,
            userId,
            anonymousId,
            event: "Order Completed",
            properties: { orderId: String(slot), total: 42.5, currency: "EUR" },
            context,
          },
        },
      };
    }),
  });
  const bytes = Buffer.from(toBinary(BatchRequestSchema, batch));
  /** @type {number[]} */
  const messageAt = [];
  for (let at = bytes.indexOf(messagePlaceholder); at >= 0; at = bytes.indexOf(messagePlaceholder, at + 1)) messageAt.push(at);
  const userAt = kinds.map((_, slot) => bytes.indexOf(token("U", slot)));
  const anonymousAt = kinds.map((_, slot) => bytes.indexOf(token("A", slot)));
  const identifiers = batchIdentifiers(shape);
  return {
    /** Sends one Batch of `batchSize` calls; resolves once acknowledged, every call accepted. */
    sendBatch() {
      const body = Buffer.from(bytes);
      for (const at of messageAt) {
        body.write(`i-${freshPrefix}-${++sequence}`.padEnd(messagePlaceholder.length, "-"), at, "latin1");
      }
      identifiers().forEach(({ userId, anonymousId }, slot) => {
        if (userId !== undefined) body.write(userId, userAt[slot] ?? -1, "latin1");
        if (anonymousId !== undefined) body.write(anonymousId, anonymousAt[slot] ?? -1, "latin1");
      });
      return new Promise((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/waypost.v1.TrackingService/Batch",
          "content-type": "application/proto",
          authorization: `Bearer ${writeKey}`,
        });
        /** @type {Buffer[]} */
        const chunks = [];
        let status = 0;
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        stream.on("data", (chunk) => chunks.push(chunk));
        stream.on("error", reject);
        stream.on("end", () => {
          const payload = Buffer.concat(chunks);
          if (status !== 200) return reject(new Error(`Batch answered ${status}: ${payload.toString().slice(0, 200)}`));
          const response = fromBinary(BatchResponseSchema, payload);
          if (response.rejected.length > 0) return reject(new Error(`rejected: ${JSON.stringify(response.rejected[0])}`));
          resolve(undefined);
        });
        stream.end(body);
      });
    },
    close: () => session.close(),
  };
}

/**
 * Batches from `concurrency` streams, each sent as soon as the last was answered, for `durationMs`.
 * @param {ReturnType<typeof identityClient>} client
 * @param {number} durationMs
 * @param {number} concurrency
 */
export async function runIdentityLoad(client, durationMs, concurrency) {
  /** @type {number[]} */
  const latencies = [];
  let calls = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await client.sendBatch();
        latencies.push(performance.now() - t);
        calls += batchSize;
      }
    }),
  );
  return { calls, latencies, elapsedMs: performance.now() - start };
}

/**
 * Batches at a steady `callsPerSecond` for `durationMs`, each sent on schedule whether or not
 * the last was answered (at most `maxInFlight` at once: a send due while that many are out is skipped, and counted).
 * @param {ReturnType<typeof identityClient>} client
 * @param {number} durationMs
 * @param {number} callsPerSecond
 */
export async function runPacedLoad(client, durationMs, callsPerSecond, maxInFlight = 64) {
  /** @type {number[]} */
  const latencies = [];
  /** @type {Set<Promise<void>>} */
  const inFlight = new Set();
  let calls = 0;
  let skipped = 0;
  const interval = (1000 * batchSize) / callsPerSecond;
  const start = performance.now();
  for (let due = start; due < start + durationMs; due += interval) {
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (inFlight.size >= maxInFlight) {
      skipped++;
      continue;
    }
    const t = performance.now();
    const sending = client
      .sendBatch()
      .then(() => {
        latencies.push(performance.now() - t);
        calls += batchSize;
      })
      .finally(() => inFlight.delete(sending));
    inFlight.add(sending);
  }
  await Promise.all(inFlight);
  return { calls, latencies, elapsedMs: performance.now() - start, skipped };
}

/**
 * GetProfile by identifier over the admin API at `perSecond`, from a process
 * of its own (bench/profile-probe-process.mjs): in this one, the load's own
 * work delays the probes' timers and answers by 15 ms and more at p99, which
 * would be counted as the service's.
 * @param {string} baseUrl
 * @param {import("./identity-graph.mjs").GraphShape} shape
 * @param {number} perSecond
 */
export function startProfileProbe(baseUrl, shape, perSecond) {
  const child = fork(fileURLToPath(new URL("../profile-probe-process.mjs", import.meta.url)), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  child.send({ type: "start", baseUrl, shape, perSecond });
  return {
    /** Stops probing; resolves with every answered probe's latency (ms) and the errors, once the last is answered. */
    stop() {
      return /** @type {Promise<{ latencies: number[], errors: string[] }>} */ (
        new Promise((resolve, reject) => {
          child.once("message", (/** @type {{ latencies: number[], errors: string[] }} */ result) => resolve(result));
          child.once("exit", (code) => reject(new Error(`the profile probe exited (${code}) before answering`)));
          child.send({ type: "stop" });
        })
      );
    },
  };
}
