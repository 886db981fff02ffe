import path from "node:path";

// The rules test/architecture/layers.test.ts holds src/ to, as a function of
// file texts, so that a test can also run them over planted files.

/** A source file: its path relative to src/ ("ingest/payload.ts") and its text. */
export interface SourceFile {
  path: string;
  text: string;
}

// The layers of src/, lowest first. A module may import its own layer and
// the layers below it, never one above: the database never learns what a
// delivery or an RPC is, and the domain never learns which transport called it.
export const layers: ReadonlyArray<{ name: string; modules: readonly string[] }> = [
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
      "config-values.ts",
      "access-config.ts",
      "identity-config.ts",
      // Enum values in words, for the CLI's and the console's labels alike.
      "enum-words.ts",
      "signing/",
      "http/",
      "tracing/",
    ],
  },
  // What a call is: its types and each type's fields. Below the warehouse,
  // which lays out a table per call type.
  { name: "calls", modules: ["calls/"] },
  { name: "database", modules: ["db/"] },
  // How a process picks up work stored in Postgres: one LISTEN connection,
  // throttled NOTIFYs, the leased worker, the job runner and maintenance.
  // Below the domain, which hands it its work (ingest's hook processor,
  // delivery's jobs), so it knows nothing of what the work is.
  { name: "background work", modules: ["background/"] },
  // The QuickJS sandbox runs the transforms of routing and of webhook sources;
  // it knows nothing of either.
  { name: "sandbox", modules: ["sandbox/"] },
  // The integrations catalog is a client of vendor APIs like the warehouse is
  // of Postgres: routing matches its subscriptions, delivery runs its actions.
  // The lake writes the warehouse's layout as files into object storage.
  { name: "outbound requests", modules: ["outbound/", "warehouse/", "lake/", "catalog/"] },
  { name: "domain", modules: ["access/", "routing/", "plans/", "ingest/", "identity/", "health/", "audiences/", "deletion/", "delivery/"] },
  { name: "edge", modules: ["api/", "compat/", "console/", "sign-in/"] },
  // The CLI is an edge too (it speaks the RPC API), but its `serve` starts the server.
  {
    name: "composition",
    modules: [
      "activity-log.ts",
      "backlog-reader.ts",
      "startup-summary.ts",
      "closers.ts",
      "database-wing.ts",
      "access-wing.ts",
      "listener-wing.ts",
      "identity-wing.ts",
      "server.ts",
      "main.ts",
      // The entry: starts the process again with V8's young-generation cap, then main.
      "heap-settings.ts",
      "start.ts",
      "cli/",
    ],
  },
];

/**
 * The domain's modules, lowest first: each may import only the ones before
 * it. Routing rules are pure and know no caller; plans check a call and know
 * nothing of how it came; ingest applies the source's plan and filters while
 * it stores; health knows nothing of delivery (delivery reports to it);
 * audiences and deletion create calls through ingest; delivery sits on top.
 */
export const domainOrder = [
  "access/",
  "routing/",
  "plans/",
  "ingest/",
  "identity/",
  "health/",
  "audiences/",
  "deletion/",
  "delivery/",
] as const;

/** Who may import gen/ (the generated protobuf messages): the edge, and these wire adapters. */
export const genImporters = ["api/", "compat/", "console/", "cli/"] as const;
export const wireAdapters: Readonly<Record<string, string>> = {
  // A kind owns its settings half, and that includes reading and writing its
  // settings as their proto message, so that the API loops over the
  // registry and never names a kind.
  "delivery/kinds/": "each destination kind converts its own settings to and from proto",
};

/**
 * The edge's modules are transports side by side, so one imports another
 * only where listed here, and never the reverse of a listed import (that
 * would be a circle between folders).
 */
export const edgeImports: Readonly<Record<string, readonly string[]>> = {
  // The /v1 API accepts the write keys the RPC API issues, read the same way.
  "compat/": ["api/"],
};

const edgeModules = ["api/", "compat/", "console/", "sign-in/"] as const;

/** Imports between the edge's modules that edgeImports does not list. */
export function edgeSiblingImports(edges: readonly Edge[]): string[] {
  const edgeModule = (relative: string) => edgeModules.find((module) => relative.startsWith(module));
  return edges
    .filter(({ from, to }) => {
      const [fromModule, toModule] = [edgeModule(from), edgeModule(to)];
      return fromModule && toModule && fromModule !== toModule && !edgeImports[fromModule]?.includes(toModule);
    })
    .map(({ from, to }) => `${from} imports ${to}, another module of the edge`);
}

/** The kinds of destination implement delivery; the API asks them, never the reverse. */
export const kindsFolder = "delivery/kinds/";

const moduleOf = (relative: string) => (relative.includes("/") ? `${relative.split("/")[0]}/` : relative);

export function layerOf(relative: string): number {
  const index = layers.findIndex((layer) => layer.modules.includes(moduleOf(relative)));
  if (index < 0) throw new Error(`${relative} is in no layer: add its folder to the layer list of test/architecture/layer-rules.ts`);
  return index;
}

export const layerName = (relative: string) => layers[layerOf(relative)]!.name;

/** Each src-relative path a file imports (relative imports only; "../gen/..." for the generated code). */
export function importsOf(file: SourceFile): string[] {
  return [...file.text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((match) =>
    path.posix.normalize(path.posix.join(path.posix.dirname(file.path), match[1]!)).replace(/\.js$/, ".ts"),
  );
}

export interface Edge {
  from: string;
  to: string;
}

/** The imports of src/ into src/ (gen/ and packages are not layers). */
export function edgesOf(files: readonly SourceFile[]): Edge[] {
  return files.flatMap((file) => importsOf(file).flatMap((to) => (to.startsWith("../") ? [] : [{ from: file.path, to }])));
}

export function upwardImports(edges: readonly Edge[]): string[] {
  return edges
    .filter(({ from, to }) => layerOf(to) > layerOf(from))
    .map(({ from, to }) => `${from} (${layerName(from)}) imports ${to} (${layerName(to)})`);
}

const domainRank = (relative: string) => (domainOrder as readonly string[]).indexOf(moduleOf(relative));

/** Imports inside the domain that go from a module to one at or after it in domainOrder (other than itself). */
export function domainOrderViolations(edges: readonly Edge[]): string[] {
  return edges
    .filter(({ from, to }) => moduleOf(from) !== moduleOf(to) && domainRank(from) >= 0 && domainRank(to) >= 0)
    .filter(({ from, to }) => domainRank(to) > domainRank(from))
    .map(({ from, to }) => `${from} imports ${to}, which comes after it in the domain order`);
}

/** Files that import gen/ and are neither the edge nor a declared wire adapter. */
export function genOutsideTheEdge(files: readonly SourceFile[]): string[] {
  const allowed = [...genImporters, ...Object.keys(wireAdapters)];
  return files
    .filter((file) => importsOf(file).some((to) => to.startsWith("../gen/")))
    .filter((file) => !allowed.some((prefix) => file.path.startsWith(prefix)))
    .map((file) => `${file.path} imports gen/`);
}

/** Imports of the API by a kind of destination. */
export function kindsImportingTheApi(edges: readonly Edge[]): string[] {
  return edges
    .filter(({ from, to }) => from.startsWith(kindsFolder) && to.startsWith("api/"))
    .map(({ from, to }) => `${from} imports ${to}`);
}
