import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeTrackingServer, type FakeServer } from "./fake-server.js";
import { acceptAll } from "./support.js";

/**
 * The package as users get it: the browser entry bundles with no Node
 * built-ins, and the DEBUG environment variable of a real process turns the
 * debug log on and off.
 */
const root = path.resolve(import.meta.dirname, "../..");
const work = mkdtempSync(path.join(tmpdir(), "waypost-client-"));
let server: FakeServer;
let received = 0;
beforeAll(async () => {
  server = await startFakeTrackingServer((req) => {
    received += req.batch.length;
    return acceptAll(req);
  });
});
afterAll(async () => {
  await server?.close();
  rmSync(work, { recursive: true, force: true });
});

function bundle(entry: string, platform: "browser" | "node", outfile?: string) {
  return build({
    entryPoints: [path.join(root, entry)],
    bundle: true,
    platform,
    format: "esm",
    metafile: true,
    logLevel: "silent",
    ...(outfile ? { outfile, write: true } : { write: false }),
  });
}

describe("browser bundle", () => {
  it("bundles the browser entry for the browser with no Node built-in", async () => {
    const result = await bundle("packages/client/src/browser.ts", "browser");
    const text = result.outputFiles![0]!.text;
    expect(result.errors).toEqual([]);
    expect(text).not.toMatch(/require\(["']node:/);
    expect(text).not.toMatch(/from ["']node:|import\(["']node:/);
    const inputs = Object.keys(result.metafile!.inputs);
    expect(inputs.filter((i) => i.startsWith("node:") || i.includes("connect-node"))).toEqual([]);
    expect(inputs.some((i) => i.endsWith("packages/client/src/browser.ts"))).toBe(true);
  });

  it("(control) the Node entry does not bundle for the browser", async () => {
    await expect(bundle("packages/client/src/index.ts", "browser")).rejects.toThrow(/node:/);
  });

  it("the bundle runs: its Analytics sends through fetch", async () => {
    const outfile = path.join(work, "browser-bundle.mjs");
    await bundle("packages/client/src/browser.ts", "browser", outfile);
    const { Analytics } = (await import(pathToFileURL(outfile).href)) as typeof import("../../packages/client/src/browser.js");
    const before = received;
    const analytics = new Analytics({ writeKey: "wk", endpoint: server.url });
    analytics.track({ userId: "u", event: "From the bundle" });
    await analytics.close();
    expect(received - before).toBe(1);
  });
});

describe("DEBUG environment variable", () => {
  let script: string;
  beforeAll(async () => {
    await bundle("packages/client/src/index.ts", "node", path.join(work, "client.mjs"));
    script = path.join(work, "send-one.mjs");
    writeFileSync(
      script,
      [
        'import { Analytics } from "./client.mjs";',
        "const analytics = new Analytics({ writeKey: 'wk', endpoint: process.env.ENDPOINT, flushAt: 1 });",
        "analytics.track({ userId: 'u1', event: 'Debugged' });",
        "await analytics.close();",
        "process.stdout.write('done');",
      ].join("\n"),
    );
  });

  function run(debug: string | undefined): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const env: NodeJS.ProcessEnv = { ...process.env, ENDPOINT: server.url };
    delete env.DEBUG;
    if (debug !== undefined) env.DEBUG = debug;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [script], { env, cwd: work });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  it("logs nothing when DEBUG is unset or names something else", async () => {
    for (const value of [undefined, "express:*", ""]) {
      const { code, stdout, stderr } = await run(value);
      expect(code).toBe(0);
      expect(stdout).toBe("done");
      expect(stderr).toBe("");
    }
  });

  it.each(["analytics", "express:*,analytics"])("DEBUG=%s writes a readable log to stderr", async (value) => {
    const { code, stderr } = await run(value);
    expect(code).toBe(0);
    const lines = stderr.trim().split("\n");
    expect(lines.every((l) => /^analytics \d{4}-\d\d-\d\dT\S+Z debug /.test(l))).toBe(true);
    expect(stderr).toMatch(/debug queued track [0-9a-f-]{36}/);
    expect(stderr).toMatch(/debug sending 1 calls/);
    expect(stderr).toMatch(/debug batch of 1 acknowledged: 1 accepted, 0 rejected/);
    expect(stderr).toMatch(/debug closed/);
  });
});

describe("both entry points export the same API", () => {
  const expected = [
    "Analytics",
    "createAnalytics",
    "createTrackingClient",
    "verifyWebhookSignature",
    "verifyWebhookSignatureAsync",
    "verifyStandardWebhook",
    "AnalyticsError",
    "InvalidCallError",
    "callLimits",
    "maxRequestBytes",
    // The descriptors of every service, and message schemas, for admin clients.
    "TrackingService",
    "SourceService",
    "DestinationService",
    "DeliveryService",
    "AudienceService",
    "DeletionService",
    "DestinationSchema",
    "RequestTooLargeSchema",
  ];

  const entries: Record<string, () => Promise<Record<string, unknown>>> = {
    index: () => import("../../packages/client/src/index.js"),
    browser: () => import("../../packages/client/src/browser.js"),
  };

  it.each(["index", "browser"])("packages/client/src/%s.ts", async (entry) => {
    const module = await entries[entry]!();
    expect(expected.filter((name) => module[name] === undefined)).toEqual([]);
    for (const service of [
      "TrackingService",
      "SourceService",
      "DestinationService",
      "DeliveryService",
      "AudienceService",
      "DeletionService",
    ]) {
      expect((module[service] as { kind: string; typeName: string }).kind).toBe("service");
    }
  });

  it("the browser's verifyWebhookSignature is the WebCrypto one (it returns a Promise)", async () => {
    const browser = await import("../../packages/client/src/browser.js");
    const node = await import("../../packages/client/src/index.js");
    expect(browser.verifyWebhookSignature("{}", "0".repeat(40), "s")).toBeInstanceOf(Promise);
    expect(node.verifyWebhookSignature("{}", "0".repeat(40), "s")).toBe(false);
  });
});
