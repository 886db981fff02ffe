import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";

// The layers of src/, lowest first. A module may import its own layer and
// the layers below it, never one above: the database never learns what a
// delivery or an RPC is, and the domain never learns which transport called it.
const layers: ReadonlyArray<{ name: string; modules: readonly string[] }> = [
  {
    name: "foundation",
    modules: [
      "clock.ts",
      "logger.ts",
      "metrics.ts",
      "errors.ts",
      "startup-error.ts",
      "admin-token.ts",
      "config.ts",
      "signing/",
      "http/",
      "tracing/",
    ],
  },
  { name: "database", modules: ["db/"] },
  { name: "outbound requests", modules: ["outbound/", "warehouse/"] },
  { name: "domain", modules: ["routing/", "ingest/", "plans/", "health/", "delivery/", "audiences/", "deletion/"] },
  { name: "edge", modules: ["api/", "compat/", "console/"] },
  { name: "composition", modules: ["activity-log.ts", "backlog-reader.ts", "startup-summary.ts", "server.ts", "main.ts", "cli/"] },
];

// Within the domain: health knows nothing of delivery (delivery reports to
// it), and ingest is below everything that creates calls.
const domainOrder: ReadonlyArray<readonly [from: string, mayNotImport: string]> = [
  ["health/", "delivery/"],
  ["ingest/", "delivery/"],
  ["ingest/", "health/"],
  ["ingest/", "audiences/"],
  ["ingest/", "deletion/"],
  ["plans/", "delivery/"],
  ["plans/", "audiences/"],
  ["plans/", "deletion/"],
  // Routing rules are pure: they know no caller.
  ["routing/", "ingest/"],
  ["routing/", "delivery/"],
  ["audiences/", "delivery/"],
  ["deletion/", "delivery/"],
];

const srcDir = new URL("../../src/", import.meta.url).pathname;

// Destination kinds are domain modules the API asks (the registry): a kind
// that knew the API, a transport or the composition could not be added or
// tested on its own.
const kindsMayNotImport = ["api/", "compat/", "console/", "cli/", "server.ts", "main.ts"];

/** Imports from a kind (src/delivery/kinds/) of the edge or the composition. */
function kindImportsAbove(edges: ReadonlyArray<{ from: string; to: string }>): string[] {
  return edges
    .filter(({ from, to }) => from.startsWith("delivery/kinds/") && kindsMayNotImport.some((above) => to.startsWith(above)))
    .map(({ from, to }) => `${from} imports ${to}`);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "app" && dir.endsWith("console") ? [] : sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

/** Each root-relative module a file imports (relative imports only; gen/ and packages are not layers). */
function importsOf(file: string, root = srcDir): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)]
    .map((match) => path.relative(root, path.resolve(path.dirname(file), match[1]!)).replace(/\.js$/, ".ts"))
    .filter((target) => !target.startsWith(".."));
}

/** Every import between the modules under `root`. */
function edgesUnder(root: string): Array<{ from: string; to: string }> {
  return sourceFiles(root).flatMap((file) => {
    const from = path.relative(root, file);
    return importsOf(file, root).map((to) => ({ from, to }));
  });
}

const moduleOf = (relative: string) => (relative.includes("/") ? `${relative.split("/")[0]}/` : relative);

function layerOf(relative: string): number {
  const index = layers.findIndex((layer) => layer.modules.includes(moduleOf(relative)));
  if (index < 0) throw new Error(`${relative} is in no layer: add its folder to the layer list of this test`);
  return index;
}

const edges = edgesUnder(srcDir);

test("every module of src/ is in a layer, and the test sees the imports", () => {
  for (const { from, to } of edges) {
    layerOf(from);
    layerOf(to);
  }
  // A guard against a parser that finds nothing and so passes everything.
  expect(edges.filter(({ from }) => from.startsWith("delivery/")).length).toBeGreaterThan(20);
});

test("no module imports a layer above its own", () => {
  const upward = edges
    .filter(({ from, to }) => layerOf(to) > layerOf(from))
    .map(({ from, to }) => `${from} (${layers[layerOf(from)]!.name}) imports ${to} (${layers[layerOf(to)]!.name})`);
  expect(upward).toEqual([]);
});

test("src/db imports nothing but the foundation and itself", () => {
  const fromDb = edges.filter(({ from, to }) => from.startsWith("db/") && !to.startsWith("db/") && layerOf(to) !== 0);
  expect(fromDb).toEqual([]);
});

test("within the domain, health, ingest, audiences and deletion do not reach into what sits above them", () => {
  const crossing = edges
    .filter(({ from, to }) => domainOrder.some(([low, high]) => from.startsWith(low) && to.startsWith(high)))
    .map(({ from, to }) => `${from} imports ${to}`);
  expect(crossing).toEqual([]);
});

test("domain code throws its own errors: only the edge speaks Connect", () => {
  const connectOutsideEdge = sourceFiles(srcDir)
    .map((file) => path.relative(srcDir, file))
    .filter((file) => [0, 1, 2, 3].includes(layerOf(file)))
    .filter((file) => /@connectrpc\/connect["'/]/.test(readFileSync(path.join(srcDir, file), "utf8")));
  expect(connectOutsideEdge).toEqual([]);
});

test("a destination kind imports neither the API, a transport nor the composition", () => {
  expect(edges.filter(({ from }) => from.startsWith("delivery/kinds/")).length).toBeGreaterThan(10);
  expect(kindImportsAbove(edges)).toEqual([]);
});

test("the kind rule catches a kind planted with an import of the API", () => {
  const planted = edgesUnder(new URL("../fixtures/layers/", import.meta.url).pathname);
  expect(kindImportsAbove(planted)).toEqual(["delivery/kinds/planted/index.ts imports api/routes.ts"]);
});
