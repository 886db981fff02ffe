// @ts-check
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import amqp from "amqplib";
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { burnDownScenario, waitForStatus } from "./burn-down.mjs";

const amqpUrl = process.env.WAYPOST_TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const natsUrl = process.env.WAYPOST_TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/**
 * `count` deliveries already queued for a destination of each broker kind,
 * beside a webhook destination's burn-down of the same size in the same
 * run: calls published per second with the broker's confirmation and the
 * attempts recorded, CPU per call of the service and of Postgres. The
 * broker's own count of what it stored checks that every call arrived.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, concurrency?: number }} options
 */
export async function brokerBurnDownScenario({ db, sink, count, concurrency = 64 }) {
  const webhook = await burnDownScenario({ db, sink, count, concurrency, baseline: false, variant: { kind: "webhook" } });
  const amqpResult = await kindBurnDown(db, count, concurrency, amqpTarget());
  const natsResult = await kindBurnDown(db, count, concurrency, natsTarget());
  const rss = Math.max(webhook.rss ?? 0, amqpResult.rss ?? 0, natsResult.rss ?? 0);
  report({
    scenario: "broker_burn_down_summary",
    deliveries: count,
    calls_per_s: { webhook: webhook.rate, amqp: amqpResult.rate, nats: natsResult.rate },
    ratio_to_webhook: {
      amqp: Math.round((amqpResult.rate / webhook.rate) * 100) / 100,
      nats: Math.round((natsResult.rate / webhook.rate) * 100) / 100,
    },
    cpu_us_per_call_service: { webhook: webhook.cpuUsPerWebhook, amqp: amqpResult.cpuUsPerCall, nats: natsResult.cpuUsPerCall },
    target_calls_per_s: 20_000,
  });
  return { rss };
}

/**
 * @typedef {{
 *   kind: string,
 *   process: string,
 *   prepare(): Promise<{ settings: object, stored(): Promise<number>, cleanUp(): Promise<void> }>,
 * }} BrokerTarget
 */

/**
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {number} count
 * @param {number} concurrency
 * @param {BrokerTarget} target
 */
async function kindBurnDown(db, count, concurrency, target) {
  const broker = await target.prepare();
  const service = await startService(db.url, { WAYPOST_DESTINATION_CONCURRENCY: String(concurrency) });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  try {
    const name = `burn-${target.kind}`;
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name } });
    const { destination } = await rpc(service.url, "DestinationService/CreateDestination", {
      destination: { name, sourceIds: [source.id], enabled: false, ...broker.settings },
    });
    await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: name });
    await checkpoint(pool);
    const brokerPid = processNamed(target.process);
    // cpuSeconds of an undefined pid is undefined, so a broker elsewhere reports null.
    const meter = await startCpuMeter(pool, { service: service.pid, broker: brokerPid });
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    await waitForStatus(pool, destination.id, count);
    const recorded = performance.now();
    const { used, transactions } = await meter.stop();
    const rss = service.peakRssMb();
    const stored = await broker.stored();
    const rate = Math.round((count / (recorded - start)) * 1000);
    const cpuUsPerCall = used.service === null ? null : Math.round((used.service * 1e6) / count);
    report({
      scenario: "broker_burn_down",
      kind: target.kind,
      deliveries: count,
      calls_per_s: rate,
      all_recorded_after_s: Math.round(recorded - start) / 1000,
      stored_by_broker: stored,
      cpu_us_per_call: {
        service: cpuUsPerCall,
        postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count),
        // The broker's own server, when it runs on this machine (RabbitMQ's beam.smp, nats-server).
        broker: used.broker == null ? null : Math.round((used.broker * 1e6) / count),
      },
      transactions_per_1000_calls: Math.round((transactions * 1000) / count),
      server_peak_rss_mb: rss,
    });
    if (stored !== count) throw new Error(`${target.kind}: the broker stored ${stored} of ${count} calls`);
    return { rate, rss, cpuUsPerCall };
  } finally {
    await service.stop();
    await pool.end();
    await broker.cleanUp();
  }
}

/** A topic exchange with one queue bound to every routing key. @returns {BrokerTarget} */
function amqpTarget() {
  return {
    kind: "amqp",
    process: "beam.smp",
    async prepare() {
      const tag = `waypost-bench-${randomBytes(4).toString("hex")}`;
      const connection = await amqp.connect(amqpUrl);
      const channel = await connection.createChannel();
      await channel.assertExchange(tag, "topic", { durable: false, autoDelete: false });
      await channel.assertQueue(tag, { durable: false, autoDelete: false });
      await channel.bindQueue(tag, tag, "#");
      return {
        settings: { kind: "DESTINATION_KIND_AMQP", amqp: { url: amqpUrl, exchange: tag, routingKey: "{type}.{event}", mandatory: true } },
        stored: async () => (await channel.checkQueue(tag)).messageCount,
        cleanUp: async () => {
          await channel.deleteQueue(tag);
          await channel.deleteExchange(tag);
          await connection.close();
        },
      };
    },
  };
}

/** A JetStream stream over one subject prefix. @returns {BrokerTarget} */
function natsTarget() {
  return {
    kind: "nats",
    process: "nats-server",
    async prepare() {
      const tag = `waypost_bench_${randomBytes(4).toString("hex")}`;
      const nc = await connectNats({ servers: natsUrl });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: tag, subjects: [`${tag}.>`] });
      return {
        settings: { kind: "DESTINATION_KIND_NATS", nats: { servers: [natsUrl], subject: `${tag}.{type}.{event}` } },
        stored: async () => (await jsm.streams.info(tag)).state.messages,
        cleanUp: async () => {
          await jsm.streams.delete(tag);
          await nc.close();
        },
      };
    },
  };
}

/**
 * The pid of the one process of this name on the machine, to meter the
 * broker's CPU beside the service's; undefined when there is none (a
 * broker elsewhere) or several.
 * @param {string} name
 */
function processNamed(name) {
  const pids = readdirSync("/proc").filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      return readFileSync(`/proc/${entry}/comm`, "utf8").trim() === name;
    } catch {
      return false;
    }
  });
  return pids.length === 1 ? Number(pids[0]) : undefined;
}
