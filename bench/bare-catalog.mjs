// @ts-check
// The integration scenarios' same-run baseline: the bare delivery loop
// (bench/lib/bare-loop.mjs: the same claims and fenced completions as the
// other bare loops) with a sender that hands each claimed call straight to
// the catalog's own runtime (@segment/actions-core's Destination with the
// catalog's Webhook entry, the same subscription and mapping as the
// scenario), through the runtime's own request client (node-fetch). With
// BATCH > 0 calls are gathered BATCH at a time (or every 20 ms) and run as
// one onBatch. No Segment-shape conversion of stored bodies beyond parsing,
// no attempt records, guards, caps or per-subscription bookkeeping.
//
//   node bench/bare-catalog.mjs DATABASE_URL SINK_URL COUNT BATCH [INFLIGHT=64]
//
// Prints one JSON line: `per_s` until the last call's request was answered.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { runBareLoop } from "./lib/bare-loop.mjs";

// The catalog is CommonJS, one entry at a time (docs/integrations.md says why).
const require = createRequire(import.meta.url);

/**
 * @param {{ url: string, sinkUrl: string, count: number, batch: number, inflight?: number }} options
 */
export async function bareCatalog({ url, sinkUrl, count, batch, inflight = 64 }) {
  /** @type {any} the catalog's runtime, untyped here */
  const core = require("@segment/actions-core");
  const { Destination } = core;
  const definition = require("@segment/action-destinations/dist/destinations/webhook").default;
  const destination = new Destination(definition);
  const subscription = (/** @type {boolean} */ batching) => ({
    partnerAction: "send",
    subscribe: 'type = "track"',
    mapping: {
      url: batching ? `${sinkUrl}/batch` : `${sinkUrl}/ok`,
      method: "POST",
      data: { "@path": "$." },
      ...(batching ? { enable_batching: true, batch_size: batch } : {}),
    },
  });
  const settings = { subscriptions: [subscription(batch > 0)] };
  /** @param {import("./lib/bare-loop.mjs").Job} job */
  const eventOf = (job) => ({ ...JSON.parse(job.payload), receivedAt: job.received_at.toISOString() });
  /** @type {Array<{ event: object, resolve: (ok: boolean) => void }>} */
  let held = [];
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const calls = held;
    held = [];
    const settle = (/** @type {boolean} */ ok) => {
      for (const call of calls) call.resolve(ok);
    };
    destination
      .onBatch(
        calls.map((c) => c.event),
        settings,
      )
      .then(
        () => settle(true),
        () => settle(false),
      );
  };
  /** @type {(job: import("./lib/bare-loop.mjs").Job) => Promise<boolean>} */
  const send =
    batch > 0
      ? (job) =>
          new Promise((resolve) => {
            held.push({ event: eventOf(job), resolve });
            if (held.length >= batch) flush();
            else timer ??= setTimeout(flush, 20);
          })
      : (job) =>
          destination.onEvent(eventOf(job), settings).then(
            () => true,
            () => false,
          );
  const result = await runBareLoop({ url, count, inflight: batch > 0 ? Math.max(inflight, batch * 2) : inflight, send });
  return { baseline: batch > 0 ? "bare-catalog-batch-loop" : "bare-catalog-loop", ...result };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, sinkUrl, count, batch, inflight] = process.argv.slice(2);
  if (!url || !sinkUrl || !count) throw new Error("usage: node bench/bare-catalog.mjs DATABASE_URL SINK_URL COUNT BATCH [INFLIGHT=64]");
  const result = await bareCatalog({ url, sinkUrl, count: Number(count), batch: Number(batch ?? 0), inflight: Number(inflight ?? 64) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
