import { hostname } from "node:os";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { eventually, startServiceProcess, type ServiceProcess } from "../helpers/process.js";
import { completionsOf, startTestServer, type TestServer } from "../helpers/server.js";
import { startVendorStandIn, type VendorStandIn } from "../helpers/vendor-stand-in.js";

// Webhook deliveries through a proxy, end to end: the vendor stand-in is the
// proxy and every host behind it. hooks.vendor.test does not resolve, so a
// delivery to it succeeds only through the proxy; private addresses are
// refused (the guard is strict here), and the proxy on loopback is still
// reached.

// The machine's own name resolves to loopback or to its private address
// (/etc/hosts, a container's): refused on the direct route. ("localhost" is
// refused when the destination is saved, before any lookup.)
const ownName = hostname().toLowerCase();
let vendor: VendorStandIn;
let server: TestServer;
const processes: ServiceProcess[] = [];

beforeAll(async () => {
  vendor = await startVendorStandIn();
  server = await startTestServer({
    config: {
      outbound: { httpsProxy: vendor.proxyUrl, noProxy: [{ host: ownName, port: 0 }] },
      // Two requests at a time: reuse shows as at most a few tunnels.
      delivery: { allowPrivateDestinations: false, perDestinationConcurrency: 2 },
    },
    ca: vendor.caPem,
  });
});
afterEach(async () => {
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await p.exited;
  }
});
afterAll(async () => {
  await server?.stop();
  await vendor?.close();
});

test("webhooks to a vendor host are delivered through the proxy, over a few reused tunnels", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "vendor",
    sourceIds: [source.id],
    webhooks: [{ url: "https://hooks.vendor.test/v1/events", headers: { "X-Team": "growth" } }],
  });
  const done = completionsOf(server, destination.id, 40);
  const tracking = server.tracking(source.writeKey);
  for (let i = 0; i < 40; i++) await tracking.track({ track: { userId: `u${i}`, event: "Signed Up" } });
  const completions = await done;
  expect(completions.map((c) => c.status)).toEqual(Array(40).fill("delivered"));
  const received = vendor.requests.slice(before.requests);
  expect(received).toHaveLength(40);
  expect(received.every((r) => r.url === "https://hooks.vendor.test/v1/events" && r.headers["x-team"] === "growth")).toBe(true);
  expect(new Set(received.map((r) => JSON.parse(r.body).userId)).size).toBe(40);
  // Not one tunnel (and TLS handshake) per call: two at a time, each kept alive.
  expect(vendor.tunnels - before.tunnels).toBeLessThanOrEqual(4);
});

test("a NO_PROXY host is sent direct, and the direct route checks the resolved address", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "internal",
    sourceIds: [source.id],
    webhooks: [{ url: `https://${ownName}:${vendor.httpsPort}/hook` }],
  });
  const done = completionsOf(server, destination.id, 1);
  await server.tracking(source.writeKey).track({ track: { userId: "u", event: "E" } });
  const [completion] = await done;
  // Through the proxy the name would not have been checked; direct, it resolves to loopback.
  expect(completion!.status).toBe("failed");
  expect(completion!.attempts.at(-1)!.error).toMatch(new RegExp(`^${ownName} resolves to address \\S+ is private`));
  expect(vendor.tunnels).toBe(before.tunnels);
  expect(vendor.requests.length).toBe(before.requests);
});

test("a server process reads HTTPS_PROXY and NODE_EXTRA_CA_CERTS from its environment and delivers through the proxy", async () => {
  const api = await startTestServer({ config: { role: "api", delivery: { allowPrivateDestinations: false } } });
  try {
    const source = await api.createSource();
    await api.createDestination({ name: "vendor", sourceIds: [source.id], webhooks: [{ url: "https://spawned.vendor.test/hook" }] });
    const worker = await startServiceProcess(api.database.url, {
      WAYPOST_ROLE: "worker",
      WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "false",
      HTTPS_PROXY: vendor.proxyUrl,
      NODE_EXTRA_CA_CERTS: vendor.caFile,
    });
    processes.push(worker);
    const before = vendor.requests.length;
    const { messageId } = await api.tracking(source.writeKey).track({ track: { userId: "spawned", event: "E" } });
    const [request] = (await vendor.waitForRequests(before + 1)).slice(before);
    expect(request).toMatchObject({ host: "spawned.vendor.test", url: "https://spawned.vendor.test/hook" });
    expect(JSON.parse(request!.body).messageId).toBe(messageId);
    await eventually(async () => {
      const { rows } = await api.pool.query(
        `SELECT d.status FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1`,
        [messageId],
      );
      return rows[0]?.status === "delivered";
    });
  } finally {
    await api.stop();
  }
});
