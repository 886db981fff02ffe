import { expect, test } from "vitest";
import { loadConfig } from "../src/config.js";
import { startupSummary } from "../src/startup-summary.js";

const url = "http://127.0.0.1:8080";

test("role all: the console, CORS, private destinations, concurrency and retention as they are in effect", () => {
  const config = loadConfig({
    WAYPOST_CORS_ORIGINS: "https://shop.example.com",
    WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/8",
    WAYPOST_DELIVERY_CONCURRENCY: "200",
    WAYPOST_RETENTION_DAYS: "3",
    DATABASE_URL: "postgres://waypost:hunter2-secret@db/waypost",
    OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel:hunter2-secret@collector.example.com:4318",
  });
  const summary = startupSummary(config, url);
  expect(summary).toEqual({
    url,
    role: "all",
    consoleUrl: "http://127.0.0.1:8080/console/",
    corsOrigins: ["https://shop.example.com"],
    privateDestinations: ["10.0.0.0/8"],
    concurrency: 200,
    perDestinationConcurrency: 64,
    retentionDays: 3,
    database: "DATABASE_URL",
    traces: "https://collector.example.com:4318/v1/traces",
  });
  expect(JSON.stringify(summary)).not.toContain("hunter2-secret");
});

test("defaults read as such: any origin, private destinations refused, the embedded database", () => {
  expect(startupSummary(loadConfig({}), url)).toMatchObject({
    corsOrigins: "*",
    privateDestinations: false,
    database: "embedded in ./.waypost",
  });
  expect(startupSummary(loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true" }), url).privateDestinations).toBe(true);
});

test("each role shows what it runs: a worker has no console or CORS, an API process no delivery concurrency", () => {
  const worker = startupSummary(loadConfig({ WAYPOST_ROLE: "worker" }), url);
  expect(worker).toMatchObject({ role: "worker", concurrency: 1024 });
  expect(worker).not.toHaveProperty("consoleUrl");
  expect(worker).not.toHaveProperty("corsOrigins");
  const api = startupSummary(loadConfig({ WAYPOST_ROLE: "api" }), url);
  expect(api).toMatchObject({ role: "api", consoleUrl: `${url}/console/`, privateDestinations: false });
  expect(api).not.toHaveProperty("concurrency");
});

test("a worker names the proxies its requests go through, without their credentials, and the hosts that go direct", () => {
  const config = loadConfig({
    WAYPOST_ROLE: "worker",
    HTTPS_PROXY: "http://egress:hunter2-secret@proxy.internal:3128",
    NO_PROXY: ".corp.example,localhost:8443",
  });
  const summary = startupSummary(config, url);
  expect(summary.proxy).toEqual({
    https: "http://proxy.internal:3128/",
    http: false,
    noProxy: ["corp.example", "localhost:8443"],
  });
  expect(JSON.stringify(summary)).not.toContain("hunter2-secret");
  expect(startupSummary(loadConfig({}), url)).not.toHaveProperty("proxy");
  expect(startupSummary(loadConfig({ WAYPOST_ROLE: "api", HTTPS_PROXY: "proxy:3128" }), url)).not.toHaveProperty("proxy");
});
