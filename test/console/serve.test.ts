import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect } from "vitest";
import { consoleCsp, createConsoleRoutes } from "../../src/console/serve.js";
import { testWith } from "../helpers/fixtures.js";

/** A raw request: fetch would normalise "../" away before it is sent. */
function get(url: string, rawPath: string, method = "GET"): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { path: rawPath, method }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    request.on("error", reject);
    request.end();
  });
}

const test = testWith();

describe("the console's static files, served by the API process", () => {
  test("redirects /console to /console/ and serves the page with a strict policy", async ({ server }) => {
    const redirect = await get(server.url, "/console");
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe("/console/");

    const page = await get(server.url, "/console/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toBe(consoleCsp);
    expect(consoleCsp).toContain("default-src 'self'");
    expect(consoleCsp).toContain("frame-ancestors 'none'");
    expect(consoleCsp).not.toContain("unsafe");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["cache-control"]).toBe("no-cache");

    // Every asset the page names is served with its type; nothing comes from elsewhere.
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((a) => !a.startsWith("data:"));
    expect(assets.length).toBe(2);
    for (const asset of assets) {
      expect(asset.startsWith("/console/assets/")).toBe(true);
      const response = await get(server.url, asset);
      expect(response.status).toBe(200);
      expect(response.headers["content-type"]).toBe(asset.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8");
      expect(response.headers["cache-control"]).toContain("immutable");
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
      expect(response.body).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[\w/.-]+\.(?:js|css|woff2?)/i);
    }
    const head = await get(server.url, assets[0]!, "HEAD");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
  });

  test("answers the page for client-side routes, and 404 for a missing asset", async ({ server }) => {
    for (const route of ["/console/deliveries", "/console/deliveries/42", "/console/destinations/new"]) {
      const response = await get(server.url, route);
      expect(response.status).toBe(200);
      expect(response.body).toContain('<div id="app">');
    }
    expect((await get(server.url, "/console/assets/missing.js")).status).toBe(404);
  });

  test("refuses path traversal, malformed paths and other methods", async ({ server }) => {
    for (const attempt of [
      "/console/../package.json",
      "/console/assets/../../package.json",
      "/console/..%2f..%2fpackage.json",
      "/console/%2e%2e/package.json",
    ]) {
      const response = await get(server.url, attempt);
      expect(response.status, attempt).toBe(400);
      expect(response.body).not.toContain("waypost");
    }
    expect((await get(server.url, "/console/%E0%A4%A")).status).toBe(400);
    const post = await get(server.url, "/console/", "POST");
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe("GET, HEAD");
  });

  test("says the console is not built when its files are missing, and leaves other paths alone", async () => {
    const empty = mkdtempSync(path.join(tmpdir(), "waypost-console-"));
    const handle = createConsoleRoutes({ dir: empty });
    const listener = http.createServer((req, res) => {
      void handle(req, res, (req.url ?? "/").split("?")[0]!).then((handled) => {
        if (!handled) res.writeHead(418).end();
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
    try {
      const missing = await get(url, "/console/");
      expect(missing.status).toBe(503);
      expect(missing.body).toContain("npm run build");
      expect((await get(url, "/consoles")).status).toBe(418);
      // Once built, the same route serves it (the files are read when first found).
      writeFileSync(path.join(empty, "index.html"), "<!doctype html><title>built</title>");
      expect((await get(url, "/console/")).body).toContain("built");
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});
