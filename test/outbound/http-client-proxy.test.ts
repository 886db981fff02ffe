import type { Dispatcher } from "undici";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import type { OutboundConfig } from "../../src/config.js";
import { createAddressGuard } from "../../src/outbound/address-guard.js";
import { createHttpClient } from "../../src/outbound/http-client.js";
import { postWebhook } from "../../src/outbound/post-webhook.js";
import { testCa } from "../helpers/server.js";
import { startReceiver } from "../helpers/receiver.js";
import { startVendorStandIn, type VendorStandIn } from "../helpers/vendor-stand-in.js";

// The outbound client against the vendor stand-in on real sockets: a
// CONNECT proxy on loopback and an HTTPS server that answers any name.
// hooks.vendor.test does not resolve, so a request to it succeeds only
// through the proxy.

let vendor: VendorStandIn;
const clients: Dispatcher[] = [];
const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
const open = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });

beforeAll(async () => {
  vendor = await startVendorStandIn();
});
afterEach(async () => {
  vendor.respond(() => undefined);
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await vendor?.close();
});

function outbound(overrides: Partial<OutboundConfig> = {}): OutboundConfig {
  return { httpsProxy: vendor.proxyUrl, httpProxy: undefined, noProxy: [], extraCaCerts: undefined, ...overrides };
}

function client(options: Partial<Parameters<typeof createHttpClient>[0]> = {}) {
  const made = createHttpClient({ guard: strict, timeoutMs: 5_000, ca: vendor.caPem, outbound: outbound(), ...options });
  clients.push(made);
  return made;
}

function post(dispatcher: Dispatcher, url: string, body = '{"event":"Signed Up"}') {
  const target = new URL(url);
  return postWebhook(dispatcher, {
    origin: target.origin,
    path: target.pathname + target.search,
    headers: { "content-type": "application/json", authorization: "Bearer vendor-key" },
    body,
    keepBytes: 1024,
    drainBytes: 64 * 1024,
  });
}

test("an https request to a name that does not resolve goes through the proxy's tunnel, TLS to the vendor inside it", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  // The guard refuses loopback, and the proxy is on loopback: the proxy itself is not guarded.
  const response = await post(client(), "https://hooks.vendor.test/v1/track?team=a");
  expect(response.statusCode).toBe(200);
  const received = vendor.requests.slice(before.requests);
  expect(received).toHaveLength(1);
  expect(received[0]).toMatchObject({ host: "hooks.vendor.test", method: "POST", url: "https://hooks.vendor.test/v1/track?team=a" });
  expect(received[0]!.headers.authorization).toBe("Bearer vendor-key");
  expect(received[0]!.body).toBe('{"event":"Signed Up"}');
  expect(vendor.tunnels - before.tunnels).toBe(1);
  expect(vendor.connects.at(-1)).toBe("hooks.vendor.test:443");

  // The same request without the proxy: the name does not resolve.
  await expect(post(client({ outbound: undefined }), "https://hooks.vendor.test/v1/track")).rejects.toMatchObject({
    code: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/),
  });
});

test("the vendor's certificate is checked end to end: without the test CA the handshake fails and nothing is sent", async () => {
  const before = vendor.requests.length;
  await expect(post(client({ ca: undefined }), "https://hooks.vendor.test/x")).rejects.toMatchObject({
    code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  });
  expect(vendor.requests.length).toBe(before);
});

test("NODE_EXTRA_CA_CERTS's certificates are trusted in addition to a client's own CAs, not instead of them", async () => {
  const both = client({ ca: testCa, outbound: outbound({ extraCaCerts: vendor.caPem }) });
  expect((await post(both, "https://extra-ca.vendor.test/x")).statusCode).toBe(200);
  // The fixture CA given as `ca` still counts: a receiver with its certificate is reached directly.
  const receiver = await startReceiver({ tls: "trusted" });
  try {
    const direct = client({
      guard: open,
      ca: testCa,
      outbound: outbound({ extraCaCerts: vendor.caPem, noProxy: [{ host: "127.0.0.1", port: 0 }] }),
    });
    expect((await post(direct, receiver.url)).statusCode).toBe(200);
  } finally {
    await receiver.close();
  }
});

test("a NO_PROXY host goes direct, and the direct route is guarded on the resolved address", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  const noProxy = [{ host: "localhost", port: 0 }];
  const direct = client({ guard: open, outbound: outbound({ noProxy }) });
  const response = await post(direct, `https://localhost:${vendor.httpsPort}/direct`);
  expect(response.statusCode).toBe(200);
  expect(vendor.requests.length - before.requests).toBe(1);
  expect(vendor.requests.at(-1)!.url).toBe(`https://localhost:${vendor.httpsPort}/direct`);
  expect(vendor.tunnels).toBe(before.tunnels);

  // localhost resolves to loopback, which the strict guard refuses before any connection.
  const guarded = client({ outbound: outbound({ noProxy }) });
  await expect(post(guarded, `https://localhost:${vendor.httpsPort}/direct`)).rejects.toMatchObject({
    code: "EWAYPOST_REFUSED_ADDRESS",
  });
  expect(vendor.requests.length - before.requests).toBe(1);
});

test("a literal private address is refused even with a proxy, and no tunnel is asked for", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  const proxied = client();
  for (const url of [
    "https://10.1.2.3/hook",
    `https://127.0.0.1:${vendor.httpsPort}/hook`,
    "https://[::1]/hook",
    "https://169.254.169.254/",
  ]) {
    await expect(post(proxied, url)).rejects.toMatchObject({ code: "EWAYPOST_REFUSED_ADDRESS" });
  }
  expect(vendor.tunnels).toBe(before.tunnels);
  expect(vendor.requests.length).toBe(before.requests);
});

test("connections are reused: many requests to one vendor host share a tunnel or two", async () => {
  const before = { tunnels: vendor.tunnels, tls: vendor.tlsConnections };
  const proxied = client();
  for (let i = 0; i < 50; i++) {
    expect((await post(proxied, "https://reuse.vendor.test/batch", `{"i":${i}}`)).statusCode).toBe(200);
  }
  expect(vendor.tunnels - before.tunnels).toBeLessThanOrEqual(2);
  expect(vendor.tlsConnections - before.tls).toBeLessThanOrEqual(2);
});

test("http:// requests go to HTTP_PROXY in absolute form (no tunnel); https:// requests never fall back to it", async () => {
  const before = { tunnels: vendor.tunnels, requests: vendor.requests.length };
  const httpOnly = client({ outbound: outbound({ httpsProxy: undefined, httpProxy: vendor.proxyUrl }) });
  expect((await post(httpOnly, "http://plain.vendor.test/in?x=1")).statusCode).toBe(200);
  expect(vendor.requests.at(-1)).toMatchObject({ host: "plain.vendor.test", url: "http://plain.vendor.test/in?x=1" });
  expect(vendor.tunnels).toBe(before.tunnels);
  // As curl and Node: HTTPS_PROXY unset means https:// goes direct (and this name does not resolve).
  await expect(post(httpOnly, "https://hooks.vendor.test/x")).rejects.toMatchObject({ code: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/) });
  expect(vendor.requests.length - before.requests).toBe(1);
});

test("through the proxy the endpoint's time limit holds, and a large answer is cut at the cap", async () => {
  const quick = client({ timeoutMs: 300 });
  vendor.respond((request) => (request.host === "slow.vendor.test" ? { status: 200, hang: true } : undefined));
  await expect(post(quick, "https://slow.vendor.test/x")).rejects.toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT" });

  vendor.respond(() => ({ status: 200, body: "x".repeat(512 * 1024) }));
  const response = await post(client(), "https://big.vendor.test/x");
  expect(response.statusCode).toBe(200);
  expect(response.body.length).toBe(1024);
});
