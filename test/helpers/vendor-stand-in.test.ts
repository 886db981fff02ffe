import { rootCertificates } from "node:tls";
import { ProxyAgent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startVendorStandIn, type VendorStandIn } from "./vendor-stand-in.js";

describe("vendor stand-in", () => {
  let vendor: VendorStandIn;
  let agent: ProxyAgent;
  beforeAll(async () => {
    vendor = await startVendorStandIn();
    agent = new ProxyAgent({ uri: vendor.proxyUrl, requestTls: { ca: [...rootCertificates, vendor.caPem] } });
  });
  afterAll(async () => {
    await agent.close();
    await vendor.close();
  });

  it("answers any host name through a CONNECT tunnel, with a certificate the test CA signed, and records the request", async () => {
    vendor.respond((req) => (req.host === "api.other.test" ? { status: 429, body: "slow down" } : undefined));
    const first = await request("https://hooks.vendor.test/track?x=1", {
      dispatcher: agent,
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer k" },
      body: '{"a":1}',
    });
    expect(first.statusCode).toBe(200);
    expect(await first.body.text()).toBe("{}");
    const second = await request("https://api.other.test:8443/v2", { dispatcher: agent });
    expect(second.statusCode).toBe(429);
    expect(await second.body.text()).toBe("slow down");

    const [one, two] = await vendor.waitForRequests(2);
    expect(one).toMatchObject({
      host: "hooks.vendor.test",
      method: "POST",
      path: "/track?x=1",
      url: "https://hooks.vendor.test/track?x=1",
      body: '{"a":1}',
    });
    expect(one!.headers.authorization).toBe("Bearer k");
    expect(two).toMatchObject({ host: "api.other.test", url: "https://api.other.test:8443/v2", method: "GET" });
    expect(vendor.connects).toEqual(["hooks.vendor.test:443", "api.other.test:8443"]);
    expect(vendor.tunnels).toBe(2);
  });

  it("keeps tunnels open for later requests to one host", async () => {
    const before = vendor.tunnels;
    // undici may open a second connection while the first is settling its
    // previous answer; after that every request reuses one of them.
    for (let i = 0; i < 20; i++) {
      const response = await request("https://reuse.vendor.test/e", { dispatcher: agent, method: "POST", body: String(i) });
      await response.body.text();
    }
    expect(vendor.tunnels - before).toBeLessThanOrEqual(2);
    expect(vendor.requests.filter((r) => r.host === "reuse.vendor.test")).toHaveLength(20);
  });

  it("fails the handshake for a client that does not trust the test CA", async () => {
    const untrusting = new ProxyAgent({ uri: vendor.proxyUrl });
    const before = vendor.requests.length;
    await expect(request("https://hooks.vendor.test/x", { dispatcher: untrusting })).rejects.toMatchObject({
      code: expect.stringMatching(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED/),
    });
    expect(vendor.requests.length).toBe(before);
    await untrusting.close();
  });
});
