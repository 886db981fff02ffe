#!/usr/bin/env node
// Writes src/catalog/catalog-index.json: every entry of the installed
// catalog (@segment/action-destinations), whether Waypost offers it, and why
// not when it does not. Loading all ~220 entries takes seconds, so the server
// reads this committed index instead; run this by hand after upgrading the
// catalog (a test fails until you do):
//
//   node scripts/catalog-index.mjs          # rewrites the index
//   node scripts/catalog-index.mjs --json   # prints the rows (what the test compares)
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
const packageDir = dirname(require.resolve("@segment/action-destinations/package.json"));
const entriesDir = join(packageDir, "dist", "destinations");

/** Modules whose use means an entry talks to its vendor on its own sockets, not through the catalog's request client. */
const ownSockets = [
  [/^kafkajs$/, "opens its own connections (Kafka client)"],
  [/^@aws-sdk\//, "opens its own connections (AWS SDK)"],
  [/^ssh2(-sftp-client)?$/, "opens its own connections (SFTP client)"],
  [/^(node:)?(https?|net|tls|http2|dgram)$/, "opens its own connections (Node's http/https/net)"],
];

/** The first own-socket module reached from a file through relative requires (the entry's code and the package's shared lib). */
function socketUse(file, seen = new Set()) {
  if (seen.has(file)) return undefined;
  seen.add(file);
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  for (const match of text.matchAll(/require\("([^"]+)"\)/g)) {
    const name = match[1];
    if (name.startsWith(".")) {
      const base = resolve(dirname(file), name);
      for (const candidate of [base, `${base}.js`, join(base, "index.js")]) {
        if (!/\.js$/.test(candidate)) continue;
        const found = socketUse(candidate, seen);
        if (found) return found;
      }
      continue;
    }
    for (const [pattern, reason] of ownSockets) if (pattern.test(name)) return `${reason}: requires ${name}`;
  }
  return undefined;
}

const schemeReasons = {
  oauth2: "needs an OAuth app held by the catalog's publisher (authentication oauth2)",
  "oauth-managed": "needs an OAuth app held by the catalog's publisher (authentication oauth-managed)",
};
const oneLine = (text) => String(text ?? "").replace(/\s+/g, " ").trim();

export function buildCatalogIndex() {
  const rows = [];
  for (const slug of readdirSync(entriesDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()) {
    const row = { slug, name: slug, description: "", actionCount: 0, batchActionCount: 0, scheme: "", offered: false, reason: "" };
    let definition;
    try {
      definition = require(join(entriesDir, slug)).default;
    } catch (error) {
      const missing = /Cannot find module '([^']+)'/.exec(String(error?.message))?.[1];
      row.reason = missing && !missing.includes(slug) ? `does not load: needs ${missing}, which the catalog does not declare` : "does not load: no entry";
      rows.push(row);
      continue;
    }
    if (!definition?.actions) {
      row.reason = "does not load: no entry";
      rows.push(row);
      continue;
    }
    const actions = Object.values(definition.actions);
    row.name = oneLine(definition.name) || slug;
    row.description = oneLine(definition.description);
    row.actionCount = actions.length;
    row.batchActionCount = actions.filter((action) => typeof action.performBatch === "function").length;
    row.scheme = definition.authentication?.scheme ?? "";
    const sockets = socketUse(join(entriesDir, slug, "index.js"));
    if (schemeReasons[row.scheme]) row.reason = schemeReasons[row.scheme];
    else if (!["", "custom", "basic"].includes(row.scheme)) row.reason = `authentication scheme ${row.scheme} is not supported`;
    else if (sockets) row.reason = sockets;
    else if (definition.mode && definition.mode !== "cloud") row.reason = `runs in the browser (mode ${definition.mode})`;
    else row.offered = true;
    rows.push(row);
  }
  return rows;
}

const rows = buildCatalogIndex();
if (process.argv.includes("--json")) {
  process.stdout.write(JSON.stringify(rows));
} else {
  const version = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version;
  const target = join(root, "src", "catalog", "catalog-index.json");
  // JSON, not code: it is data, read once by src/catalog/catalog.ts (the build copies it into dist/).
  writeFileSync(
    target,
    `${JSON.stringify({ generatedBy: "scripts/catalog-index.mjs: do not edit; run it again after upgrading the catalog", catalogVersion: version, entries: rows })}\n`,
  );
  execFileSync(join(root, "node_modules", ".bin", "biome"), ["format", "--write", target], { stdio: "inherit" });
  const offered = rows.filter((row) => row.offered).length;
  console.log(`${rows.length} entries, ${offered} offered: ${target}`);
}
