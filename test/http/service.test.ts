import http2 from "node:http2";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startServiceProcess } from "../helpers/process.js";

const test = testWith();

test("health, readiness and 404 over HTTP/1.1", async ({ server }) => {
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect(await (await fetch(`${server.url}/readyz`)).text()).toBe("ready\n");
  const missing = await fetch(`${server.url}/nope`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toEqual({ error: "no route for GET /nope" });
});

test("HTTP/2 cleartext on the same port", async ({ server }) => {
  const session = http2.connect(server.url);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const request = session.request({ ":path": "/healthz" });
      request.on("response", (headers) => resolve(Number(headers[":status"])));
      request.on("error", reject);
      request.end();
    });
    expect(status).toBe(200);
  } finally {
    session.close();
  }
});

test("without DATABASE_URL, node dist/server.js runs an embedded Postgres and creates an admin token", async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "waypost-embedded-"));
  // An empty DATABASE_URL counts as unset.
  const service = await startServiceProcess("", { WAYPOST_DATA_DIR: dataDir, WAYPOST_ADMIN_TOKEN: "" });
  try {
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    const token = readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    expect(service.logs.join("\n")).toContain(path.join(dataDir, "admin-token"));
    expect(service.logs.join("\n")).not.toContain(token);
    const created = await fetch(`${service.url}/waypost.v1.SourceService/CreateSource`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: '{"source":{"name":"web"}}',
    });
    expect(created.status).toBe(200);
  } finally {
    service.child.kill("SIGTERM");
  }
  expect(await service.exited).toBe(0);
}, 60_000);

test("as root, a data directory others cannot enter still works: the cluster moves to /var/lib/waypost", async () => {
  if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0);
  const privateParent = mkdtempSync(path.join(tmpdir(), "waypost-private-"));
  chmodSync(privateParent, 0o700);
  const dataDir = path.join(privateParent, "data");
  const service = await startServiceProcess("", { WAYPOST_DATA_DIR: dataDir });
  try {
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    expect(service.logs.join("\n")).toContain("/var/lib/waypost/");
  } finally {
    service.child.kill("SIGTERM");
  }
  expect(await service.exited).toBe(0);
  const cluster = /"cluster":"([^"]+)"/.exec(service.logs.join("\n"))?.[1];
  if (cluster) rmSync(path.dirname(cluster), { recursive: true, force: true });
}, 60_000);
