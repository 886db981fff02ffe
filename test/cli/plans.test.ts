import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { checkoutPlan } from "../plans/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

let env: NodeJS.ProcessEnv;
let dir: string;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  dir = mkdtempSync(path.join(tmpdir(), "waypost-plan-cli-"));
});

function writePlan(name: string, plan: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(plan, null, 2));
  return file;
}

describe("apply, get, violations", () => {
  test("apply sets the plan and its mode; get prints it back; violations lists what calls did", async ({ server }) => {
    const source = await server.createSource("cli-plan");
    const file = writePlan("plan.json", checkoutPlan);
    const applied = await waypost(["plan", "apply", file, "--source", source.id, "--mode", "observe"], env);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/mode:\s+observe/);
    const got = await waypost(["plan", "get", "--source", source.id], env);
    expect(JSON.parse(got.stdout)).toEqual(checkoutPlan);
    expect(got.stderr).toContain("mode observe");

    await server
      .tracking(source.writeKey)
      .track({ track: { userId: "u1", event: "Order Completed", properties: { total: "1", currency: "EUR" } } });
    const listed = await waypost(["plan", "violations", "--source", source.id, "--since", "1h"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/1\s+wrong_type\s+track\s+Order Completed\s+properties\.total\s+must be number\s+"1"/);

    // Applying again without --mode keeps the mode.
    const again = await waypostJson<{ trackingPlan: { mode: string } }>(["plan", "apply", file, "--source", source.id], env);
    expect(again.trackingPlan.mode).toBe("PLAN_MODE_OBSERVE");
  });

  test("an invalid plan file fails before anything is sent, naming the path", async ({ server }) => {
    const source = await server.createSource("cli-bad-plan");
    const file = writePlan("bad.json", { events: { Paid: { properties: { type: "object", properties: { total: { type: "money" } } } } } });
    const result = await waypost(["plan", "apply", file, "--source", source.id, "--mode", "block"], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("plan.events.Paid.properties.properties.total.type");
    const got = await waypostJson<{ trackingPlan: { etag?: string } }>(["plan", "get", "--source", source.id], env);
    expect(got.trackingPlan.etag ?? "").toBe("");
  });
});

describe("the plan as applied, and schema dialects", () => {
  test("get prints the plan byte for byte as applied, keys in the file's order", async ({ server }) => {
    const source = await server.createSource("cli-exact");
    // Keys out of alphabetical order, four-space indent, an inline object, no final newline.
    const text =
      '{\n    "name": "Shop",\n    "events": {\n        "Zed": {"properties": {"type": "object", "properties": {"z": {"type": "number"}, "a": {"type": "string"}}}},\n        "Alpha": {}\n    },\n    "allowUnplannedEvents": false\n}';
    const file = path.join(dir, "exact.json");
    writeFileSync(file, text);
    const applied = await waypost(["plan", "apply", file, "--source", source.id], env);
    expect(applied.code, applied.stderr).toBe(0);
    const got = await waypost(["plan", "get", "--source", source.id], env);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toBe(text);
    // Round trip: what get printed, applied again, prints the same bytes.
    writeFileSync(file, got.stdout);
    expect((await waypost(["plan", "apply", file, "--source", source.id], env)).code).toBe(0);
    expect((await waypost(["plan", "get", "--source", source.id], env)).stdout).toBe(text);
  });

  test("a draft-07 plan applies; draft-04 and a Snowplow Iglu schema fail with the path and keyword", async ({ server }) => {
    const source = await server.createSource("cli-drafts");
    const properties = { type: "object", properties: { total: { type: "number" } } };
    const draft07 = writePlan("draft-07.json", {
      events: { Paid: { properties: { $schema: "http://json-schema.org/draft-07/schema#", ...properties } } },
    });
    const ok = await waypost(["plan", "apply", draft07, "--source", source.id], env);
    expect(ok.code, ok.stderr).toBe(0);

    const draft04 = writePlan("draft-04.json", {
      events: { Paid: { properties: { $schema: "http://json-schema.org/draft-04/schema#", ...properties } } },
    });
    const old = await waypost(["plan", "apply", draft04, "--source", source.id], env);
    expect(old.code).toBe(2);
    expect(old.stderr).toContain("plan.events.Paid.properties.$schema");
    expect(old.stderr).toContain("is not a JSON Schema dialect plans support");
    expect(old.stderr).not.toContain("no schema with key or ref");

    const iglu = writePlan("iglu.json", {
      events: {
        Paid: {
          properties: {
            $schema: "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
            self: { vendor: "com.acme", name: "paid", format: "jsonschema", version: "1-0-0" },
            ...properties,
          },
        },
      },
    });
    const snowplow = await waypost(["plan", "apply", iglu, "--source", source.id], env);
    expect(snowplow.code).toBe(2);
    expect(snowplow.stderr).toContain("plan.events.Paid.properties.self");
    expect(snowplow.stderr).toContain("Snowplow Iglu");
  });
});

test("infer builds a plan from stored calls that the same traffic then satisfies in block mode", async ({ server }) => {
  const source = await server.createSource("cli-infer");
  const tracking = server.tracking(source.writeKey);
  const traffic = async (round: number) => {
    await tracking.track({
      track: { userId: "u1", messageId: `a${round}`, event: "Order Completed", properties: { total: 10, currency: "EUR", items: [1] } },
    });
    await tracking.track({
      track: { userId: "u1", messageId: `b${round}`, event: "Order Completed", properties: { total: 5.5, currency: "USD", coupon: "X" } },
    });
    await tracking.track({
      track: { userId: "u2", messageId: `c${round}`, event: "Signed Up", properties: { plan: { name: "pro", seats: 3 } } },
    });
    await tracking.identify({ identify: { userId: "u1", messageId: `d${round}`, traits: { email: "a@example.com", age: null } } });
    await tracking.page({ page: { anonymousId: "x", messageId: `e${round}`, name: "Home", properties: { path: "/" } } });
  };
  await traffic(1);
  const inferred = await waypost(["plan", "infer", "--source", source.id, "--since", "1h"], env);
  expect(inferred.code, inferred.stderr).toBe(0);
  expect(inferred.stderr).toContain("built from 5 stored calls");
  const plan = JSON.parse(inferred.stdout);
  expect(plan.events["Order Completed"].properties).toEqual({
    type: "object",
    properties: { coupon: { type: "string" }, currency: { type: "string" }, items: { type: "array" }, total: { type: "number" } },
    required: ["currency", "total"],
  });
  expect(plan.identify.traits.properties.age).toEqual({ type: "null" });

  const file = writePlan("inferred.json", plan);
  const applied = await waypost(["plan", "apply", file, "--source", source.id, "--mode", "block"], env);
  expect(applied.code, applied.stderr).toBe(0);
  await traffic(2);
  const stored = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source.id]);
  expect(stored.rows[0].n).toBe(10);
  const violations = await waypostJson<{ violations?: unknown[] }>(["plan", "violations", "--source", source.id], env);
  expect(violations.violations ?? []).toEqual([]);
  // A call outside what was seen is refused.
  const refused = await tracking
    .track({ track: { userId: "u1", event: "Order Completed", properties: { total: "10", currency: "EUR" } } })
    .catch((e) => e);
  expect(String(refused)).toContain("violates the tracking plan: properties.total: must be number");
});

describe("codegen", () => {
  const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
  const tsc = path.join(repoRoot, "node_modules/typescript/bin/tsc");

  /**
   * A project that depends on @waypost/client (the workspace package, built)
   * with the generated module and one program per entry of `programs`.
   */
  function project(generated: string, programs: Record<string, string>): string {
    const root = mkdtempSync(path.join(tmpdir(), "waypost-codegen-"));
    mkdirSync(path.join(root, "node_modules/@waypost"), { recursive: true });
    symlinkSync(path.join(repoRoot, "packages/client"), path.join(root, "node_modules/@waypost/client"), "dir");
    writeFileSync(path.join(root, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(path.join(root, "tracking-plan.ts"), generated);
    for (const [file, main] of Object.entries(programs)) writeFileSync(path.join(root, file), main);
    return root;
  }

  /**
   * One tsc --strict run over the given files: its errors, each starting
   * with the file it is in (an error's indented detail lines joined to it).
   */
  function compile(root: string, files: string[]): Promise<string[]> {
    const args = [
      tsc,
      "--strict",
      "--noEmit",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--skipLibCheck",
      ...files,
    ];
    return new Promise((resolve) => {
      execFile(process.execPath, args, { cwd: root }, (_error, stdout, stderr) => {
        const errors: string[] = [];
        for (const line of `${stdout}${stderr}`.split("\n")) {
          if (/^\s/.test(line) && errors.length > 0) errors[errors.length - 1] += `\n${line}`;
          else if (line.trim() !== "") errors.push(line);
        }
        resolve(errors);
      });
    });
  }

  const header =
    'import { Analytics } from "@waypost/client";\nimport { identify, trackOrderCompleted, trackSignedUp } from "./tracking-plan.js";\nconst analytics = new Analytics({ writeKey: "k", endpoint: "http://127.0.0.1:1" });\n';

  test("the module compiles under tsc --strict with correct calls and refuses a wrongly typed property", async () => {
    const file = writePlan("codegen.json", checkoutPlan);
    const out = path.join(dir, "tracking-plan.ts");
    const result = await waypost(["plan", "codegen", file, "--out", out], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("2 events");
    const generated = readFileSync(out, "utf8");
    expect(generated).toContain("export function trackOrderCompleted(");

    // The correct program and the two wrong ones, type-checked together
    // (one tsc start instead of three): each file's errors are its own.
    const root = project(generated, {
      "good.ts": `${header}trackOrderCompleted(analytics, { userId: "u1", properties: { total: 12.5, currency: "EUR" } });\ntrackSignedUp(analytics, { userId: "u1" });\nidentify(analytics, { userId: "u1", traits: { email: "a@example.com", age: 3 } });\n`,
      "bad.ts": `${header}trackOrderCompleted(analytics, { userId: "u1", properties: { total: "12.50", currency: "EUR" } });\n`,
      "wrong-enum.ts": `${header}trackOrderCompleted(analytics, { userId: "u1", properties: { total: 1, currency: "GBP" } });\n`,
    });
    const errors = await compile(root, ["good.ts", "bad.ts", "wrong-enum.ts"]);
    // Every error is in one of the wrong programs: none in the correct one or the generated module.
    expect(errors.filter((line) => !/^(bad|wrong-enum)\.ts\(/.test(line))).toEqual([]);
    expect(errors.filter((line) => line.startsWith("bad.ts("))).toContainEqual(
      expect.stringMatching(/^bad\.ts\(4,.*error TS2322: Type 'string' is not assignable to type 'number'/),
    );
    expect(errors.filter((line) => line.startsWith("wrong-enum.ts(")).length).toBeGreaterThan(0);
  }, 120_000);
});
