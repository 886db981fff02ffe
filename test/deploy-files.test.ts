import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../src/config.js";

// The Dockerfile and compose.yaml are checked by reading, as no Docker engine
// runs here: what they copy exists and reaches the build context, they start
// the server the way package.json does, their health checks ask endpoints the
// server serves, and every variable they set is one Waypost reads.

const root = fileURLToPath(new URL("..", import.meta.url));
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const packageJson = JSON.parse(read("package.json")) as { scripts: Record<string, string> };
const configSource = read("src/config.ts");
const operationalRoutes = read("src/http/operational-routes.ts");

interface Instruction {
  keyword: string;
  args: string;
}

interface Stage {
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile as stages of instructions: comments dropped, continued lines joined. */
function dockerfileStages(text: string): Stage[] {
  const logical = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    const instruction = { keyword: keyword!.toUpperCase(), args: args!.trim() };
    if (instruction.keyword === "FROM") stages.push({ name: /\bAS\s+(\S+)$/i.exec(instruction.args)?.[1], instructions: [] });
    stages.at(-1)!.instructions.push(instruction);
  }
  return stages;
}

/** A .dockerignore pattern as a regular expression over slash-separated relative paths. */
function ignorePattern(pattern: string): RegExp {
  const source = pattern
    .replace(/^\/+|\/+$/g, "")
    .split(/(\*\*\/|\*|\?)/)
    .map((part) =>
      part === "**/" ? "(?:.*/)?" : part === "*" ? "[^/]*" : part === "?" ? "[^/]" : part.replace(/[.+^${}()|[\]\\]/g, "\\$&"),
    )
    .join("");
  return new RegExp(`^${source}$`);
}

const ignorePatterns = read(".dockerignore")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith("#"));

/** Whether the build context leaves the path out: it, or a folder above it, matches a pattern. */
function ignored(relative: string): boolean {
  const parts = relative.split("/");
  return parts.some((_, i) => ignorePatterns.some((pattern) => ignorePattern(pattern).test(parts.slice(0, i + 1).join("/"))));
}

/** The variables a process is given must be ones src/config.ts reads. */
function readByConfig(name: string): boolean {
  return new RegExp(`\\b${name}\\b`).test(configSource);
}

/** The paths of health endpoints the server answers. */
const servedPaths = [...operationalRoutes.matchAll(/path === "(\/[a-z]+)"/g)].map((m) => m[1]!);

const stages = dockerfileStages(read("Dockerfile"));
const final = stages.at(-1)!;
const finalArgs = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const finalEnv = Object.fromEntries(finalArgs("ENV").flatMap((args) => [...args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])));

test("the parsers see the files: the health endpoints, the stages", () => {
  expect(servedPaths).toEqual(expect.arrayContaining(["/healthz", "/readyz"]));
  expect(stages.length).toBeGreaterThanOrEqual(2);
  expect(ignored("node_modules/pg/index.js")).toBe(true);
  expect(ignored("src/server.ts")).toBe(false);
});

test("the image starts the server as npm start does, as an unprivileged user, on 0.0.0.0 and the exposed port", () => {
  const start = packageJson.scripts.start!;
  expect(start).toMatch(/^exec node /);
  expect(JSON.parse(finalArgs("CMD").at(-1)!)).toEqual(start.replace(/^exec /, "").split(" "));
  const user = finalArgs("USER").at(-1);
  expect(user).toBeDefined();
  expect(["root", "0"]).not.toContain(user);
  expect(finalEnv.HOST).toBe("0.0.0.0");
  expect(finalArgs("EXPOSE")).toEqual([finalEnv.PORT]);
  expect(Object.keys(finalEnv).filter((name) => !readByConfig(name))).toEqual([]);
  // What it starts is what the build makes.
  expect(packageJson.scripts.build).toContain("dist/server.js");
});

test("the image's health check asks an endpoint the server serves", () => {
  const [check] = finalArgs("HEALTHCHECK");
  const endpoint = /\/(healthz|readyz)\b/.exec(check ?? "")?.[0];
  expect(endpoint).toBeDefined();
  expect(servedPaths).toContain(endpoint);
});

test("every COPY from the build context names a path that exists and is not left out by .dockerignore", () => {
  const copies = stages.flatMap((stage) => stage.instructions).filter((i) => i.keyword === "COPY" && !i.args.startsWith("--from="));
  expect(copies.length).toBeGreaterThan(0);
  const sources = copies.flatMap((copy) => copy.args.split(/\s+/).slice(0, -1));
  expect(sources.filter((source) => !existsSync(path.join(root, source)))).toEqual([]);
  expect(sources.filter((source) => source !== "." && ignored(source))).toEqual([]);
  // `COPY . .` feeds `npm run build`: what it compiles and runs must reach the context.
  const tsconfig = JSON.parse(read("tsconfig.json")) as { include: string[] };
  const buildInputs = [
    "tsconfig.json",
    ...tsconfig.include,
    "src/console/build.mjs",
    "src/console/app/main.tsx",
    "src/console/app/tsconfig.json",
    "src/db/migrations",
    "packages/client/tsconfig.json",
    "packages/client/src/index.ts",
  ];
  expect(buildInputs.filter((input) => !existsSync(path.join(root, input)) || ignored(input))).toEqual([]);
  // The host's own builds and installs stay out of it.
  expect(["node_modules", "dist", "packages/client/dist", ".waypost", ".git"].filter((p) => !ignored(p))).toEqual([]);
});

test("every COPY --from names an earlier stage that makes what is copied", () => {
  const names = stages.map((stage) => stage.name);
  for (const copy of final.instructions.filter((i) => i.keyword === "COPY" && i.args.startsWith("--from="))) {
    const [, stageName, from] = /^--from=(\S+)\s+(\S+)\s+\S+$/.exec(copy.args)!;
    const stage = stages[names.indexOf(stageName)];
    expect(stage, copy.args).toBeDefined();
    const workdir = stage!.instructions.find((i) => i.keyword === "WORKDIR")!.args;
    const relative = path.posix.relative(workdir, from!);
    const runs = stage!.instructions.filter((i) => i.keyword === "RUN").map((i) => i.args);
    const copied = stage!.instructions.filter((i) => i.keyword === "COPY").map((i) => i.args);
    const made =
      (relative === "node_modules" && runs.some((run) => /npm (install|ci)\b/.test(run))) ||
      (relative === "dist" && runs.some((run) => run.includes("npm run build"))) ||
      copied.some((args) =>
        args
          .split(/\s+/)
          .slice(0, -1)
          .some((source) => source === relative || source === "."),
      );
    expect(made, copy.args).toBe(true);
  }
  // The runtime's dependencies leave the dev ones out.
  const dependencies = stages.find((stage) => stage.instructions.some((i) => i.args.includes("--omit=dev")));
  expect(final.instructions.some((i) => i.args.startsWith(`--from=${dependencies?.name} `))).toBe(true);
});

interface ComposeService {
  image?: string;
  build?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
}

test("compose.yaml runs Waypost on its Postgres, with a named volume, the database URL and health checks", () => {
  const compose = parse(read("compose.yaml")) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
  const { waypost, postgres } = compose.services;
  expect(waypost?.build).toBe(".");
  expect(existsSync(path.join(root, "Dockerfile"))).toBe(true);
  expect(postgres?.image).toMatch(/^postgres:\d+$/);

  // Postgres keeps its data in a named volume, at the path its image stores it.
  const postgresVolume = postgres!.volumes!.map((v) => v.split(":")).find(([, target]) => target === "/var/lib/postgresql/data");
  expect(postgresVolume).toBeDefined();
  expect(Object.keys(compose.volumes)).toContain(postgresVolume![0]);

  // The URL reaches that service, as the user, password and database it creates.
  const env = postgres!.environment!;
  // The password is one variable with a default, the same in both services.
  const password = env.POSTGRES_PASSWORD!;
  expect(password).toMatch(/^\$\{POSTGRES_PASSWORD:-\w+\}$/);
  const url = new URL(waypost!.environment!.DATABASE_URL!.replace(password, "from-the-variable"));
  expect(url.password).toBe("from-the-variable");
  expect(url.protocol).toBe("postgres:");
  expect(url.hostname).toBe("postgres");
  expect(url.username).toBe(env.POSTGRES_USER);
  expect(url.pathname).toBe(`/${env.POSTGRES_DB}`);
  expect(() => loadConfig(waypost!.environment!)).not.toThrow();
  expect(Object.keys(waypost!.environment!).filter((name) => !readByConfig(name))).toEqual([]);

  // Waypost starts once Postgres is healthy; its own check asks an endpoint it serves.
  expect(waypost!.depends_on?.postgres?.condition).toBe("service_healthy");
  expect(postgres!.healthcheck!.test.join(" ")).toContain("pg_isready");
  const endpoint = /\/(healthz|readyz)\b/.exec(waypost!.healthcheck!.test.join(" "))?.[0];
  expect(servedPaths).toContain(endpoint);
  expect(waypost!.healthcheck!.test.join(" ")).toContain(`:${waypost!.environment!.PORT}/`);

  // The published port is the one it listens on; the data directory is a volume.
  expect(waypost!.ports!.map((p) => p.split(":").at(-1))).toEqual([waypost!.environment!.PORT]);
  const dataVolume = waypost!.volumes!.map((v) => v.split(":")).find(([, target]) => target === waypost!.environment!.WAYPOST_DATA_DIR);
  expect(Object.keys(compose.volumes)).toContain(dataVolume?.[0]);

  // docker stop waits longer than the graceful stop may take before it kills.
  const grace = /^(\d+)s$/.exec(waypost!.stop_grace_period ?? "");
  expect(Number(grace?.[1]) * 1000).toBeGreaterThan(loadConfig({}).delivery.shutdownTimeoutMs);
});
