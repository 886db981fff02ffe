import { expect, test } from "vitest";
import { loadConfig } from "../src/config.js";

test("defaults are the documented ones", () => {
  const config = loadConfig({});
  expect(config.port).toBe(8080);
  expect(config.role).toBe("all");
  expect(config.databaseUrl).toBeUndefined();
  expect(config.dataDir).toBe("./.waypost");
  expect(config.delivery.timeoutMs).toBe(5_000);
  expect(config.delivery.shutdownTimeoutMs).toBe(10_000);
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
