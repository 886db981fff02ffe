// @ts-check
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import amqp from "amqplib";
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { addBareDestination, queueDeliveries } from "../lib/queue.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";
import { waitForStatus } from "./burn-down.mjs";
import { logBurnDown } from "./log-burn-down.mjs";

const amqpUrl = process.env.WAYPOST_TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const natsUrl = process.env.WAYPOST_TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/**
 * `count` deliveries already queued for a destination of one broker kind
 * (`amqp`: a topic exchange with one bound queue on the machine's RabbitMQ;
 * `nats`: a JetStream stream on the machine's NATS), in one `all` process:
 * calls published per second with the broker's confirmation and the
 * attempts recorded, CPU per call of the service, of Postgres and of the
 * broker. The broker's own count of what it stored checks that every call
 * arrived. Then the same run's bare reference on the same broker and the
 * same tables: bench/bare-broker.mjs (the burn-down's bare claim and
 * completion loop, publishing through the broker's client library). Then
 * the same destination on the call log (./log-burn-down.mjs, a database of
 * its own), beside the bare cursor loader publishing to the same broker.
 * @param {{ db: import("../lib/postgres.mjs").Database, createDatabase: () => Promise<import("../lib/postgres.mjs").Database>,
 *           count: number, kind: "amqp" | "nats", concurrency?: number }} options
 */
export async function brokerBurnDownScenario({ db, createDatabase, count, kind, concurrency = 64 }) {
  const target = kind === "amqp" ? amqpTarget() : natsTarget();
  const broker = await target.prepare();
  try {
    const service = await kindBurnDown(db, count, concurrency, target, broker);
    await broker.purge();
    const bare = await bareBrokerBaseline(db, count, kind, broker.bareTarget);
    const stored = await broker.stored();
    if (stored !== count) throw new Error(`${kind}: the broker stored ${stored} of the bare loop's ${count} calls`);
    // Timed as the service's rate is: until the last call's completion is recorded.
    const bareRate = Math.round(count / bare.all_recorded_after_s);
    const ratio = ratioOf(service.rate, bareRate);
    const target20k = checkTarget(`${kind} burn-down calls/s`, service.rate, 20_000);
    report({
      scenario: kind,
      layout: "per_call",
      deliveries: count,
      rate: service.rate,
      unit: "calls/s until recorded",
      bare_rate: bareRate,
      ratio,
      target: { rate: target20k.goal, met: target20k.met },
      ...service.line,
      bare: { name: bare.baseline, ...omit(bare, "baseline") },
    });
    await broker.purge();
    const log = await logBurnDown({
      createDatabase,
      scenario: kind,
      kind,
      count,
      goal: 20_000,
      env: { WAYPOST_DESTINATION_CONCURRENCY: String(concurrency) },
      async createDestination(url) {
        const name = `log-${kind}`;
        const { source } = await rpc(url, "SourceService/CreateSource", { source: { name } });
        const { destination } = await rpc(url, "DestinationService/CreateDestination", {
          destination: { name, sourceIds: [source.id], enabled: false, ...broker.settings },
        });
        return { source, destination };
      },
      delivered: () => broker.stored(),
      reset: () => broker.purge(),
      bareTarget: broker.bareTarget,
      processes: { broker: processNamed(target.process) },
      perCallRate: service.rate,
    });
    return { rss: Math.max(service.rss, log?.rss ?? 0), rate: service.rate };
  } finally {
    await broker.cleanUp();
  }
}

/**
 * The bare publish loop's deliveries on the same tables (a destination row of its own), then bench/bare-broker.mjs.
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {number} count
 * @param {"amqp" | "nats"} kind
 * @param {string} bareTarget
 */
async function bareBrokerBaseline(db, count, kind, bareTarget) {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const { rows } = await pool.query("SELECT id FROM sources LIMIT 1");
    const destinationId = kind === "amqp" ? "00000000-0000-4000-8000-00000000b0a1" : "00000000-0000-4000-8000-00000000b0a2";
    await addBareDestination(pool, { id: destinationId, name: `bare-${kind}` });
    await queueDeliveries(pool, { sourceId: rows[0].id, destinationId, count, prefix: `bare-${kind}-${Date.now()}` });
    await pool.query("VACUUM delivery_queue");
    await checkpoint(pool);
  } finally {
    await pool.end();
  }
  const result = await runScript("bare-broker.mjs", [db.url, kind, bareTarget, count, 256]);
  if (result.recorded !== count) throw new Error(`bare ${kind} loop: ${result.recorded} of ${count} recorded, ${result.failed} failed`);
  return result;
}

/**
 * @param {Record<string, unknown>} object
 * @param {...string} keys
 */
const omit = (object, ...keys) => Object.fromEntries(Object.entries(object).filter(([key]) => !keys.includes(key)));

/**
 * @typedef {{
 *   kind: string,
 *   process: string,
 *   prepare(): Promise<PreparedBroker>,
 * }} BrokerTarget
 * @typedef {{ settings: object, bareTarget: string, stored(): Promise<number>, purge(): Promise<void>, cleanUp(): Promise<void> }} PreparedBroker
 */

/**
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {number} count
 * @param {number} concurrency
 * @param {BrokerTarget} target
 * @param {PreparedBroker} broker
 */
async function kindBurnDown(db, count, concurrency, target, broker) {
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
    if (stored !== count) throw new Error(`${target.kind}: the broker stored ${stored} of ${count} calls`);
    const line = {
      all_recorded_after_s: Math.round(recorded - start) / 1000,
      stored_by_broker: stored,
      cpu_us_per_call: {
        service: used.service === null ? null : Math.round((used.service * 1e6) / count),
        postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count),
        // The broker's own server, when it runs on this machine (RabbitMQ's beam.smp, nats-server).
        broker: used.broker == null ? null : Math.round((used.broker * 1e6) / count),
      },
      transactions_per_1000_calls: Math.round((transactions * 1000) / count),
      concurrency,
      server_peak_rss_mb: rss,
    };
    return { rate, rss, line };
  } finally {
    await service.stop();
    await pool.end();
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
        bareTarget: tag,
        stored: async () => (await channel.checkQueue(tag)).messageCount,
        purge: async () => void (await channel.purgeQueue(tag)),
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
        bareTarget: tag,
        stored: async () => (await jsm.streams.info(tag)).state.messages,
        purge: async () => void (await jsm.streams.purge(tag)),
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
