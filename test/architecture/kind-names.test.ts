import { expect, test } from "vitest";
import { kindDescriptors } from "../../src/delivery/kinds/descriptors.js";
import { registeredKinds } from "../../src/delivery/kinds/registry.js";
import { kindNamedOutsideItsModule, mustNotNameKinds } from "./kind-names.js";
import { sourceFiles } from "./source-files.js";

// No destination kind is named outside its own module: the rule and where
// it holds are in kind-names.ts.

const kindNames = registeredKinds.map((kind) => kind.name);

test("the checked places exist and the kinds are known", () => {
  expect(kindNames).toEqual(kindDescriptors.map((kind) => kind.name));
  expect(kindNames).toContain("integration");
  const checked = sourceFiles().filter((file) => mustNotNameKinds(file.path));
  for (const folder of ["api/", "ingest/", "routing/", "db/queries/", "delivery/"]) {
    expect(
      checked.some((file) => file.path.startsWith(folder)),
      folder,
    ).toBe(true);
  }
});

test("no file of the API, ingest, routing, the delivery loop or the queries names a destination kind", () => {
  expect(kindNamedOutsideItsModule(sourceFiles(), kindNames)).toEqual([]);
});

test("the checker catches planted violations, and lets a kind's own files and other meanings be", () => {
  const planted = [
    { path: "api/destination-rules.ts", text: 'const a = 1;\nif (existing?.kind === "integration") a;' },
    { path: "api/draft.ts", text: "if (input.kind === DestinationKind.INTEGRATION) go();" },
    { path: "db/queries/source-filters.ts", text: "const sql = `SELECT x FROM destinations d WHERE d.kind = 'integration'`;" },
    { path: "delivery/completion.ts", text: 'import { DestinationKind as K } from "x";\nconst n = K.NATS;' },
    { path: "delivery/kinds/broker-kind.ts", text: 'const name = "amqp";' },
    { path: "routing/route-rules.ts", text: 'const k = "webhook"; // a destination kind here' },
    { path: "ingest/source-filters.ts", text: 'const k = "postgres";' },
  ];
  expect(kindNamedOutsideItsModule(planted, kindNames)).toEqual([
    'api/destination-rules.ts:2 names "integration"',
    "api/draft.ts:1 names DestinationKind.INTEGRATION",
    'db/queries/source-filters.ts:1 names "integration"',
    "delivery/completion.ts:2 names K.NATS",
    'delivery/kinds/broker-kind.ts:1 names "amqp"',
    'routing/route-rules.ts:1 names "webhook"',
    'ingest/source-filters.ts:1 names "postgres"',
  ]);
  const allowed = [
    { path: "delivery/kinds/integration/index.ts", text: 'export const k = { name: "integration", proto: DestinationKind.INTEGRATION };' },
    { path: "delivery/kinds/registry.ts", text: 'kindNamed("webhook");' },
    { path: "console/app/kinds/nats.tsx", text: 'const kind = "nats";' },
    { path: "api/destination-service.ts", text: "if (input.kind !== DestinationKind.UNSPECIFIED) go();" },
    { path: "api/x.ts", text: '// an "integration" destination\n/* kind = "amqp" */\nconst url = "https://x.example/integration";' },
    { path: "api/source-service.ts", text: 'if (row.kind === "webhook") hookChanged(id);' },
    { path: "db/queries/sources.ts", text: "const sql = `SELECT 1 FROM sources WHERE kind = 'webhook'`;" },
    { path: "db/queries/deliveries.ts", text: 'function f(layout: JobTableLayout = "postgres") {}' },
    { path: "api/integration-service.ts", text: 'throw notFound("integration", slug);' },
  ];
  expect(kindNamedOutsideItsModule(allowed, kindNames)).toEqual([]);
});
