import path from "node:path";
import type { SourceFile } from "./layer-rules.js";

// The rule test/architecture/kind-names.test.ts holds src/ to: outside a
// kind's own folder, the code that serves every destination (the API,
// ingest, routing, the delivery loop, the database's queries) never names a
// destination kind. It loops over the registry or calls a kind's hooks
// (src/delivery/kinds/kind.ts), so a new kind changes none of it.

/**
 * Whether a file must not name a kind: the folders that serve every kind,
 * the delivery loop's own files (not the kinds' folders), and the shared
 * files of kinds/ other than the two lists of kinds (registry.ts and the
 * clients' descriptors.ts). The console and CLI are clients with a file per
 * kind; gen/ is generated.
 */
export function mustNotNameKinds(file: string): boolean {
  if (["api/", "ingest/", "routing/", "db/queries/", "plans/", "health/", "audiences/", "deletion/"].some((p) => file.startsWith(p))) {
    return true;
  }
  if (/^delivery\/[^/]+\.ts$/.test(file)) return true;
  return /^delivery\/kinds\/[^/]+\.ts$/.test(file) && !["delivery/kinds/registry.ts", "delivery/kinds/descriptors.ts"].includes(file);
}

/** Where a kind's name means something else, and is not a kind. */
const otherMeanings: ReadonlyArray<{ name: string; applies(file: string, line: string): boolean }> = [
  // A kind of source too: webhook sources, in their own files.
  { name: "webhook", applies: (file) => file.startsWith("ingest/hooks/") || /source|^hook-/.test(path.posix.basename(file)) },
  // The job table's single-node layout (beside "citus").
  { name: "postgres", applies: (_, line) => /\blayout\b|JobTableLayout/.test(line) },
  // A catalog entry, as IntegrationService (the catalog's API) names what it looks up.
  { name: "integration", applies: (file) => path.posix.basename(file) === "integration-service.ts" },
];

/** The code of a file without its comments (a comment may say "an integration's subscriptions"; only code names a kind). */
function codeOf(text: string): string {
  return (
    text
      .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " "))
      // A line comment, but not the `//` of a URL in a string.
      .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1")
  );
}

/**
 * Each line of a file that must not name a kind but does: a kind's stored
 * name as a string ("integration", 'integration' in SQL), or a member of
 * the DestinationKind enum other than UNSPECIFIED (under any name it is
 * imported as).
 */
export function kindNamedOutsideItsModule(files: readonly SourceFile[], kindNames: readonly string[]): string[] {
  const names = kindNames.join("|");
  return files
    .filter((file) => mustNotNameKinds(file.path))
    .flatMap((file) => {
      const enums = ["DestinationKind", ...[...file.text.matchAll(/\bDestinationKind as (\w+)/g)].map((m) => m[1]!)];
      const enumMember = new RegExp(`\\b(?:${enums.join("|")})\\.(?!UNSPECIFIED\\b)[A-Z][A-Z_]*\\b`);
      const literal = new RegExp(`(["'])(${names})\\1`, "g");
      return codeOf(file.text)
        .split("\n")
        .flatMap((line, i) => {
          const named = [...line.matchAll(literal)]
            .map((m) => m[2]!)
            .filter((name) => !otherMeanings.some((other) => other.name === name && other.applies(file.path, line)));
          const member = line.match(enumMember)?.[0];
          const found = [...named.map((name) => JSON.stringify(name)), ...(member ? [member] : [])];
          return found.length === 0 ? [] : [`${file.path}:${i + 1} names ${found.join(", ")}`];
        });
    });
}
