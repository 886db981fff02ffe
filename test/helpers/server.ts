import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type pg from "pg";
import { expect } from "vitest";
import { DeliveryService } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationService, type Destination } from "../../gen/waypost/v1/destination_pb.js";
import { IntegrationService } from "../../gen/waypost/v1/integration_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DestinationSchema } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock, systemClock, type Clock } from "../../src/clock.js";
import { loadConfig, type Config } from "../../src/config.js";
import type { DeliveryCompletion } from "../../src/db/job-table/index.js";
import { createLogger } from "../../src/logger.js";
import { startWaypost, type Waypost, type WaypostOptions } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

export const testAdminToken = "test-admin-token-0123456789";
export const testCa = readFileSync(new URL("../fixtures/tls/ca-cert.pem", import.meta.url), "utf8");

export interface TestServerOptions {
  /** Overrides of the config (delivery settings merge). */
  config?: Partial<Omit<Config, "delivery" | "outbound">> & {
    delivery?: Partial<Config["delivery"]>;
    outbound?: Partial<Config["outbound"]>;
  };
  clock?: Clock;
  /** Trust the test CA of test/fixtures/tls (default true). */
  trustTestCa?: boolean;
  /** More CA certificates (PEM) outbound requests trust, beside the system roots (a vendor stand-in's `caPem`). */
  ca?: string | string[];
  /** Use this database instead of a new one (several servers on one database). */
  database?: TestDatabase;
  /** Capture the service's logs (at debug level) here. */
  logStream?: NodeJS.WritableStream;
  /** The HTTP routes, given the defaults (a spy in front of one, or a wrapper). */
  routes?: WaypostOptions["routes"];
}

export interface TestServer {
  /** http://127.0.0.1:PORT */
  url: string;
  adminToken: string;
  pool: pg.Pool;
  clock: Clock;
  database: TestDatabase;
  waypost: Waypost;
  transport: Transport;
  sources: Client<typeof SourceService>;
  destinations: Client<typeof DestinationService>;
  deliveries: Client<typeof DeliveryService>;
  integrations: Client<typeof IntegrationService>;
  createSource(name?: string): Promise<{ id: string; writeKey: string }>;
  createDestination(init: MessageInitShape<typeof DestinationSchema>): Promise<Destination>;
  tracking(writeKey: string): Client<typeof TrackingService>;
  /** Resolves when deliveries reach one of the given states in this process. */
  waitForDeliveries(count: number, statuses?: string[]): Promise<DeliveryCompletion[]>;
  /** Stops the service, keeping the database; start() brings it back on the same port. */
  restart(): Promise<void>;
  stopService(): Promise<void>;
  startService(): Promise<void>;
  stop(): Promise<void>;
}

/** A real Waypost on loopback, on its own database, with admin clients. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(path.join(tmpdir(), "waypost-data-"));
  const base = loadConfig({
    DATABASE_URL: database.url,
    PORT: "0",
    HOST: "127.0.0.1",
    WAYPOST_ADMIN_TOKEN: testAdminToken,
    WAYPOST_DATA_DIR: dataDir,
    WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true",
    WAYPOST_LOG_LEVEL: process.env.WAYPOST_TEST_LOG ?? "silent",
    // The suite's layouts: batching destinations on the call log (the default), or per call (test/run.mjs --per-call).
    WAYPOST_CALL_LOG: process.env.WAYPOST_TEST_CALL_LOG ?? "on",
    // Identity resolution into profiles, on by default as in production.
    WAYPOST_IDENTITY: process.env.WAYPOST_TEST_IDENTITY ?? "on",
  });
  const { delivery, outbound, ...rest } = options.config ?? {};
  let config: Config = {
    ...base,
    ...rest,
    delivery: { ...base.delivery, ...delivery },
    outbound: { ...base.outbound, ...outbound },
  };
  const ca = [...(options.trustTestCa === false ? [] : [testCa]), ...[options.ca ?? []].flat()];
  const clock = options.clock ?? systemClock;
  const logger = options.logStream ? createLogger("debug", options.logStream) : createLogger(config.logLevel);
  const start = () =>
    startWaypost({
      config,
      logger,
      clock,
      ...(options.routes ? { routes: options.routes } : {}),
      ...(ca.length > 0 ? { ca } : {}),
    });
  let waypost = await start();
  config = { ...config, port: waypost.port };
  let running = true;
  const transport = createConnectTransport({ baseUrl: waypost.url, httpVersion: "1.1" });
  const adminHeaders = { authorization: `Bearer ${testAdminToken}` };
  const sources = withHeaders(createClient(SourceService, transport), adminHeaders);
  const destinations = withHeaders(createClient(DestinationService, transport), adminHeaders);
  const deliveries = withHeaders(createClient(DeliveryService, transport), adminHeaders);
  const integrations = withHeaders(createClient(IntegrationService, transport), adminHeaders);
  const server: TestServer = {
    get url() {
      return waypost.url;
    },
    adminToken: testAdminToken,
    get pool() {
      return waypost.pool;
    },
    clock,
    database,
    get waypost() {
      return waypost;
    },
    transport,
    sources,
    destinations,
    deliveries,
    integrations,
    async createSource(name = "test source") {
      const { source } = await sources.createSource({ source: { name } });
      return { id: source!.id, writeKey: source!.writeKey };
    },
    async createDestination(init) {
      const { destination } = await destinations.createDestination({ destination: init });
      return destination!;
    },
    tracking(writeKey) {
      return withHeaders(createClient(TrackingService, transport), { authorization: `Bearer ${writeKey}` });
    },
    waitForDeliveries(count, statuses = ["delivered", "failed", "expired", "cancelled"]) {
      const loop = waypost.delivery;
      if (!loop) throw new Error("this server does not deliver (role api)");
      return new Promise((resolve) => {
        const seen: DeliveryCompletion[] = [];
        const off = loop.events.on("completed", (completions) => {
          seen.push(...completions.filter((c) => statuses.includes(c.status)));
          if (seen.length >= count) {
            off();
            resolve(seen);
          }
        });
      });
    },
    async stopService() {
      if (!running) return;
      running = false;
      await waypost.stop();
    },
    async startService() {
      if (running) return;
      waypost = await start();
      running = true;
    },
    async restart() {
      await server.stopService();
      await server.startService();
    },
    async stop() {
      await server.stopService();
      if (!options.database) await database.drop();
    },
  };
  return server;
}

/** A client whose every call carries the given headers. */
function withHeaders<T extends object>(client: T, headers: Record<string, string>): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const method = Reflect.get(target, prop, receiver);
      if (typeof method !== "function") return method;
      return (request: unknown, callOptions: { headers?: Record<string, string> } = {}) =>
        method.call(target, request, { ...callOptions, headers: { ...headers, ...callOptions.headers } });
    },
  });
}

export { ManualClock };

/** Resolves with the completions of one destination once `count` of them are written by `target`'s delivery loop. */
export function completionsOf(target: TestServer, destinationId: string, count: number): Promise<DeliveryCompletion[]> {
  const events = target.waypost.delivery!.events;
  return new Promise((resolve) => {
    const seen: DeliveryCompletion[] = [];
    const off = events.on("completed", (completions) => {
      seen.push(...completions.filter((c) => c.destinationId === destinationId));
      if (seen.length >= count) {
        off();
        resolve(seen);
      }
    });
  });
}

/** When the destination's deliveries are due again (the latest of them), as the API lists them; each must have a time. */
export async function nextAttemptOf(target: TestServer, destinationId: string): Promise<Date> {
  const { deliveries } = await target.deliveries.listDeliveries({ destinationId });
  const due = deliveries.flatMap((d) => (d.nextAttemptTime ? [timestampDate(d.nextAttemptTime).getTime()] : []));
  expect(due).toHaveLength(deliveries.length);
  return new Date(Math.max(...due));
}
