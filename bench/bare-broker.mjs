// @ts-check
// The broker scenarios' same-run baseline: the bare delivery loop
// (bench/lib/bare-loop.mjs: the same claims and fenced completions as the
// burn-down's bare loop) with senders that publish each claimed call
// straight through the broker's client library, with what the service's
// publisher asks of the broker: for AMQP a confirm channel, persistent,
// `mandatory` messages with the call's id; for NATS an acknowledged
// JetStream publish with the call's id as `msgID` (the stream's
// de-duplication). No templates, guards, timeouts or attempt records.
//
//   node bench/bare-broker.mjs DATABASE_URL amqp EXCHANGE COUNT [INFLIGHT=256]   (routing key track.order)
//   node bench/bare-broker.mjs DATABASE_URL nats SUBJECT_PREFIX COUNT [INFLIGHT=256]
//
// Env: WAYPOST_TEST_AMQP_URL, WAYPOST_TEST_NATS_URL (the machine's RabbitMQ and NATS by default).
// Prints one JSON line: `per_s` until the last publish was confirmed, and when the last was recorded.
import { fileURLToPath } from "node:url";
import { jetstream } from "@nats-io/jetstream";
import { connect as connectNats, headers as natsHeaders } from "@nats-io/transport-node";
import amqp from "amqplib";
import { runBareLoop } from "./lib/bare-loop.mjs";

const amqpUrl = process.env.WAYPOST_TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const natsUrl = process.env.WAYPOST_TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/**
 * @param {{ url: string, kind: "amqp" | "nats", target: string, count: number, inflight?: number }} options
 */
export async function bareBroker({ url, kind, target, count, inflight = 256 }) {
  const publisher = kind === "amqp" ? await amqpPublisher(target) : await natsPublisher(target);
  try {
    const result = await runBareLoop({ url, count, inflight, send: publisher.send });
    return { baseline: `bare-${kind}-publish-loop`, ...result };
  } finally {
    await publisher.close();
  }
}

/**
 * Publishes a call to `exchange` (routing key track.order) as the service's AMQP kind asks of RabbitMQ.
 * @param {string} exchange
 */
export async function amqpPublisher(exchange) {
  const connection = await amqp.connect(amqpUrl);
  const channel = await connection.createConfirmChannel();
  let returned = 0;
  /** @type {string | undefined} */
  let closed;
  /** Publishes waiting for their confirmation: a channel the broker closes (a missing exchange) fails them all. */
  const waiting = new Set();
  const fail = (/** @type {string} */ why) => {
    closed ??= why;
    for (const resolve of waiting) resolve(false);
    waiting.clear();
  };
  channel.on("return", () => returned++);
  channel.on("error", (error) => fail(String(error)));
  channel.on("close", () => fail("channel closed"));
  return {
    /** @param {{ message_id: string, payload: string }} job @returns {Promise<boolean>} */
    send: (job) =>
      new Promise((resolve) => {
        if (closed) return resolve(false);
        const options = { mandatory: true, persistent: true, contentType: "application/json", messageId: job.message_id };
        waiting.add(resolve);
        channel.publish(exchange, "track.order", Buffer.from(job.payload), options, (error) => {
          waiting.delete(resolve);
          resolve(!error);
        });
      }),
    async close() {
      if (!closed) await channel.close();
      await connection.close();
      if (returned > 0) throw new Error(`amqp: ${returned} messages returned unroutable`);
    },
  };
}

/**
 * Publishes a call to `${prefix}.track.order` as the service's NATS kind asks of JetStream.
 * @param {string} prefix
 */
export async function natsPublisher(prefix) {
  const nc = await connectNats({ servers: natsUrl, noAsyncTraces: true });
  const js = jetstream(nc);
  return {
    /** @param {{ message_id: string, payload: string }} job */
    async send(job) {
      await js.publish(`${prefix}.track.order`, job.payload, { msgID: job.message_id, headers: natsHeaders() });
      return true;
    },
    close: () => nc.close(),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, kind, target, count, inflight] = process.argv.slice(2);
  if (!url || (kind !== "amqp" && kind !== "nats") || !target) {
    throw new Error("usage: node bench/bare-broker.mjs DATABASE_URL amqp|nats EXCHANGE|SUBJECT_PREFIX COUNT [INFLIGHT=256]");
  }
  const result = await bareBroker({ url, kind, target, count: Number(count), inflight: Number(inflight ?? 256) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
