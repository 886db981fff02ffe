import { expect, test } from "vitest";
import { loadConfig } from "../src/config.js";

test("defaults follow the spec", () => {
  const config = loadConfig({});
  expect(config.port).toBe(8080);
  expect(config.role).toBe("all");
  expect(config.databaseUrl).toBeUndefined();
  expect(config.dataDir).toBe("./.waypost");
  expect(config.delivery.timeoutMs).toBe(5_000);
  expect(config.delivery.retry.initialDelayMs).toBe(10_000);
  expect(config.delivery.retry.maxDelayMs).toBe(30 * 60_000);
  expect(config.delivery.retry.deadlineMs).toBe(4 * 3_600_000);
  expect(config.retentionMs).toBe(7 * 24 * 3_600_000);
  expect(config.delivery.allowPrivateDestinations).toBe(false);
});

test("bad values are refused naming the variable", () => {
  expect(() => loadConfig({ PORT: "eighty" })).toThrow(/PORT/);
  expect(() => loadConfig({ WAYPOST_ROLE: "boss" })).toThrow(/WAYPOST_ROLE/);
  expect(() => loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/99" })).toThrow(/WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
  expect(() => loadConfig({ WAYPOST_ADMIN_TOKEN: "short" })).toThrow(/WAYPOST_ADMIN_TOKEN/);
});

test("private destinations: true, or a CIDR list", () => {
  expect(loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true" }).delivery.allowPrivateDestinations).toBe(true);
  expect(loadConfig({ WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "10.0.0.0/8, fd00::/8" }).delivery.allowedCidrs).toEqual(["10.0.0.0/8", "fd00::/8"]);
});

test("the service listens on loopback unless HOST says otherwise", () => {
  expect(loadConfig({}).host).toBe("127.0.0.1");
  expect(loadConfig({ HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
});

test("connection cap and summary interval come from the environment, with documented defaults", () => {
  const defaults = loadConfig({});
  expect(defaults.connections.maxConnections).toBe(10_000);
  expect(defaults.connections.firstByteTimeoutMs).toBe(10_000);
  expect(defaults.summaryIntervalMs).toBe(60_000);
  const set = loadConfig({ WAYPOST_MAX_CONNECTIONS: "500", WAYPOST_SUMMARY_INTERVAL_SECONDS: "0" });
  expect(set.connections.maxConnections).toBe(500);
  expect(set.summaryIntervalMs).toBe(0);
  expect(() => loadConfig({ WAYPOST_MAX_CONNECTIONS: "many" })).toThrow(/WAYPOST_MAX_CONNECTIONS/);
});
