import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { createNoProxyMatcher } from "../src/outbound/no-proxy.js";
import { testCa } from "./helpers/server.js";

// The outbound part of the config: proxies, NO_PROXY and NODE_EXTRA_CA_CERTS,
// read as curl and Node read them.

test("no proxy and no extra CAs unless set", () => {
  expect(loadConfig({}).outbound).toEqual({ httpsProxy: undefined, httpProxy: undefined, noProxy: [], extraCaCerts: undefined });
  expect(loadConfig({ HTTPS_PROXY: "", http_proxy: " ", NO_PROXY: "" }).outbound.httpsProxy).toBeUndefined();
});

test("proxy URLs: the lower-case name wins, a bare host:port is http://, credentials are kept", () => {
  const both = loadConfig({ https_proxy: "http://lower:3128", HTTPS_PROXY: "http://upper:3128", HTTP_PROXY: "proxy.internal:8080" });
  expect(both.outbound.httpsProxy).toBe("http://lower:3128");
  expect(both.outbound.httpProxy).toBe("http://proxy.internal:8080");
  // An empty lower-case value does not hide the upper-case one.
  expect(loadConfig({ https_proxy: "", HTTPS_PROXY: "https://egress:443/" }).outbound.httpsProxy).toBe("https://egress");
  expect(loadConfig({ HTTPS_PROXY: "http://user:p%40ss@egress:3128" }).outbound.httpsProxy).toBe("http://user:p%40ss@egress:3128");
});

test("a proxy URL Waypost cannot use is refused naming the variable, never echoing a password", () => {
  expect(() => loadConfig({ HTTPS_PROXY: "socks5://egress:1080" })).toThrow(/HTTPS_PROXY must be an http:\/\/ or https:\/\/ proxy/);
  expect(() => loadConfig({ http_proxy: "http://egress:3128/path" })).toThrow(/http_proxy must be a proxy's address with no path/);
  let message = "";
  try {
    loadConfig({ HTTPS_PROXY: "http://user:secret@egress:99999" });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    message = (error as Error).message;
  }
  expect(message).toMatch(/^HTTPS_PROXY must be a proxy URL/);
  expect(message).not.toContain("secret");
});

test("NO_PROXY: commas or spaces, leading dots and *. dropped, host:port, [IPv6], and * alone for every host", () => {
  const entries = loadConfig({ no_proxy: "Internal.Example, .corp.test  *.svc.local,localhost:8443,[::1]:443,10.0.0.0/8" }).outbound
    .noProxy;
  expect(entries).toEqual([
    { host: "internal.example", port: 0 },
    { host: "corp.test", port: 0 },
    { host: "svc.local", port: 0 },
    { host: "localhost", port: 8443 },
    { host: "::1", port: 443 },
    { host: "10.0.0.0/8", port: 0 },
  ]);
  const direct = createNoProxyMatcher(entries);
  expect(direct("internal.example", 443)).toBe(true);
  expect(direct("api.internal.example", 443)).toBe(true);
  expect(direct("notinternal.example", 443)).toBe(false);
  expect(direct("corp.test", 443)).toBe(true);
  expect(direct("a.b.corp.test", 80)).toBe(true);
  expect(direct("x.svc.local", 443)).toBe(true);
  expect(direct("localhost", 8443)).toBe(true);
  expect(direct("localhost", 443)).toBe(false);
  expect(direct("[::1]", 443)).toBe(true);
  expect(direct("10.20.30.40", 443)).toBe(true);
  expect(direct("11.0.0.1", 443)).toBe(false);
  expect(direct("api.vendor.test", 443)).toBe(false);

  expect(loadConfig({ NO_PROXY: "*" }).outbound.noProxy).toEqual([{ host: "*", port: 0 }]);
  expect(createNoProxyMatcher(loadConfig({ NO_PROXY: "*" }).outbound.noProxy)("anything.test", 443)).toBe(true);
  expect(loadConfig({ no_proxy: "", NO_PROXY: "upper.test" }).outbound.noProxy).toEqual([{ host: "upper.test", port: 0 }]);
  expect(() => loadConfig({ NO_PROXY: "host:99999" })).toThrow(/NO_PROXY entries/);
});

test("NODE_EXTRA_CA_CERTS: the file's certificates are read once; a file that cannot be read or holds none stops the start", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-extra-ca-"));
  const file = path.join(dir, "extra.pem");
  writeFileSync(file, `# the corporate CA\n${testCa}`);
  expect(loadConfig({ NODE_EXTRA_CA_CERTS: file }).outbound.extraCaCerts).toBe(`${testCa.trim()}\n`);
  expect(() => loadConfig({ NODE_EXTRA_CA_CERTS: path.join(dir, "missing.pem") })).toThrow(
    /NODE_EXTRA_CA_CERTS names .*missing\.pem.*cannot be read/,
  );
  writeFileSync(path.join(dir, "empty.pem"), "nothing here\n");
  expect(() => loadConfig({ NODE_EXTRA_CA_CERTS: path.join(dir, "empty.pem") })).toThrow(/holds no PEM certificate/);
});
