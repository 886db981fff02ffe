import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import amqp from "amqplib";

export const testAmqpUrl = process.env.WAYPOST_TEST_AMQP_URL || "amqp://guest:guest@127.0.0.1:5672";
export const testNatsUrl = process.env.WAYPOST_TEST_NATS_URL || "nats://127.0.0.1:4222";

/**
 * Whether the broker at `url` answers its protocol's greeting: NATS speaks
 * first (INFO), RabbitMQ answers the AMQP 0-9-1 header with connection.start
 * (a method frame, type 1). Missing, the test file skips with one line
 * saying so; under CI=true it fails instead, so CI never passes by skipping.
 */
export async function brokerAnswers(kind: "amqp" | "nats", url: string): Promise<boolean> {
  if (await brokerProbe(kind, url)) return true;
  const name = kind === "amqp" ? "RabbitMQ (WAYPOST_TEST_AMQP_URL)" : "NATS JetStream (WAYPOST_TEST_NATS_URL)";
  const safe = url.replace(/\/\/[^@/]*@/, "//");
  if (process.env.CI === "true") throw new Error(`${name} does not answer at ${safe}; under CI=true the broker tests never skip`);
  console.warn(`skipping the ${kind} broker tests: ${name} does not answer at ${safe}`);
  return false;
}

/**
 * A topic exchange with one queue of the same name bound to every routing key on the test RabbitMQ, for `fn`
 * (given the name and `stored()`, the queue's message count); both deleted after.
 */
export async function withAmqpExchange(fn: (tag: string, stored: () => Promise<number>) => Promise<void>): Promise<void> {
  const tag = `waypost-bench-test-${randomBytes(4).toString("hex")}`;
  const connection = await amqp.connect(testAmqpUrl);
  const channel = await connection.createChannel();
  try {
    await channel.assertExchange(tag, "topic", { durable: false, autoDelete: false });
    await channel.assertQueue(tag, { durable: false, autoDelete: false });
    await channel.bindQueue(tag, tag, "#");
    await fn(tag, async () => (await channel.checkQueue(tag)).messageCount);
  } finally {
    await channel.deleteQueue(tag);
    await channel.deleteExchange(tag);
    await connection.close();
  }
}

/**
 * A JetStream stream over the subjects `<tag>.>` on the test NATS, for `fn` (given the tag and `stored()`, the
 * stream's message count); deleted after.
 */
export async function withNatsStream(fn: (tag: string, stored: () => Promise<number>) => Promise<void>): Promise<void> {
  const tag = `waypost_bench_test_${randomBytes(4).toString("hex")}`;
  const nc = await connectNats({ servers: testNatsUrl });
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.add({ name: tag, subjects: [`${tag}.>`] });
    await fn(tag, async () => (await jsm.streams.info(tag)).state.messages);
  } finally {
    await jsm.streams.delete(tag).catch(() => {});
    await nc.close();
  }
}

/** Whether the server at `url` greets as its protocol does, within 5 s. */
function brokerProbe(kind: "amqp" | "nats", url: string): Promise<boolean> {
  const parsed = new URL(url);
  const port = Number(parsed.port || (kind === "amqp" ? 5672 : 4222));
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, parsed.hostname.replace(/^\[(.*)\]$/, "$1"));
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(5_000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => {
      if (kind === "amqp") socket.write(Buffer.from("AMQP\x00\x00\x09\x01", "latin1"));
    });
    socket.once("data", (data) => done(kind === "amqp" ? data[0] === 1 : data.toString("latin1").startsWith("INFO")));
  });
}

/** Closes the RabbitMQ connections whose client gave this connection_name, as an operator or a broker restart would. */
export async function closeRabbitConnections(connectionName: string, reason: string): Promise<number> {
  const run = promisify(execFile);
  const { stdout } = await run("rabbitmqctl", ["list_connections", "pid", "client_properties", "-q", "--no-table-headers"]);
  const pids = stdout
    .split("\n")
    .filter((line) => line.includes(`{"connection_name","${connectionName}"}`))
    .map((line) => line.split("\t")[0]!);
  for (const pid of pids) await run("rabbitmqctl", ["close_connection", pid, reason]);
  return pids.length;
}

/** A NATS server of the test's own (the machine's `nats-server`), for settings the shared one lacks, such as a token. */
export interface OwnNatsServer {
  url: string;
  stop(): Promise<void>;
}

export async function startOwnNatsServer(args: readonly string[]): Promise<OwnNatsServer> {
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port: free } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(free));
    });
  });
  const { spawn } = await import("node:child_process");
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), ...args], { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // It logs "Server is ready" once it accepts clients.
  await new Promise<void>((resolve, reject) => {
    let log = "";
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`nats-server exited (${code}): ${log.slice(-500)}`)));
    child.stderr.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Server is ready")) resolve();
    });
  });
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    async stop() {
      child.kill();
      await exited;
    },
  };
}
