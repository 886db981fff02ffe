import { describe, expect, test } from "vitest";
import {
  domainOrderViolations,
  edgeSiblingImports,
  edgesOf,
  genOutsideTheEdge,
  kindsImportingTheApi,
  layerOf,
  layers,
  upwardImports,
} from "./layer-rules.js";
import { sourceFiles } from "./source-files.js";

// What may import what in src/: the rules and their reasons are in
// layer-rules.ts (and docs/design.md#layers). In short, the layers lowest
// first are foundation, calls, database, outbound requests, domain, edge,
// composition; inside the domain the order is routing < plans < ingest <
// health < audiences < deletion < delivery; only the edge and declared wire
// adapters import gen/; a kind of destination never imports the API; the
// edge's modules import each other only as edgeImports lists (compat/ the API's
// write-key check, never api/ the compatible API).

const files = sourceFiles();
const edges = edgesOf(files);
const domainName = "domain";

test("every module of src/ is in a layer, and the test sees the imports", () => {
  for (const file of files) layerOf(file.path);
  for (const { to } of edges) layerOf(to);
  // A guard against a parser that finds nothing and so passes everything.
  expect(edges.filter(({ from }) => from.startsWith("delivery/")).length).toBeGreaterThan(20);
  expect(edges.some(({ from, to }) => from.startsWith("ingest/") && to.startsWith("plans/"))).toBe(true);
});

test("no module imports a layer above its own", () => {
  expect(upwardImports(edges)).toEqual([]);
});

test("src/db imports nothing but the foundation and itself", () => {
  const fromDb = edges.filter(({ from, to }) => from.startsWith("db/") && !to.startsWith("db/") && layerOf(to) !== 0);
  expect(fromDb).toEqual([]);
});

test("the domain's modules import only those before them in the domain order", () => {
  expect(domainOrderViolations(edges)).toEqual([]);
});

test("only the edge and the declared wire adapters import gen/", () => {
  expect(genOutsideTheEdge(files)).toEqual([]);
});

test("no kind of destination imports the API", () => {
  expect(kindsImportingTheApi(edges)).toEqual([]);
});

test("the edge's modules import each other only as listed", () => {
  expect(edgeSiblingImports(edges)).toEqual([]);
  // A guard that the listed import is seen, so the rule is not vacuous.
  expect(edges.some(({ from, to }) => from.startsWith("compat/") && to.startsWith("api/"))).toBe(true);
});

test("domain code throws its own errors: only the edge speaks Connect", () => {
  const belowTheEdge = layers.findIndex((layer) => layer.name === domainName);
  const connectOutsideEdge = files
    .filter((file) => layerOf(file.path) <= belowTheEdge)
    .filter((file) => /@connectrpc\/connect["'/]/.test(file.text))
    .map((file) => file.path);
  expect(connectOutsideEdge).toEqual([]);
});

// The checks above pass on today's code; these show they would fail on code
// that broke a rule, by running them over planted files.
describe("the checker catches planted violations", () => {
  const planted = (filePath: string, text: string) => [{ path: filePath, text }];

  test("a kind importing the API, at any depth of its folder", () => {
    const files = [
      ...planted("delivery/kinds/amqp/settings.ts", 'import { toConnectError } from "../../../api/errors.js";'),
      ...planted("delivery/kinds/registry.ts", 'import type { X } from "../../api/destination-service.js";'),
    ];
    expect(kindsImportingTheApi(edgesOf(files))).toEqual([
      "delivery/kinds/amqp/settings.ts imports api/errors.ts",
      "delivery/kinds/registry.ts imports api/destination-service.ts",
    ]);
    // The same import from the API into a kind is the allowed direction.
    expect(kindsImportingTheApi(edgesOf(planted("api/x.ts", 'import { k } from "../delivery/kinds/amqp/index.js";')))).toEqual([]);
  });

  test("a domain module importing gen/, but not the edge or a kind", () => {
    const files = [
      ...planted("ingest/from-proto.ts", 'import type { Track } from "../../gen/waypost/v1/tracking_pb.js";'),
      ...planted("api/tracking.ts", 'import type { Track } from "../../gen/waypost/v1/tracking_pb.js";'),
      ...planted("cli/commands/x.ts", 'import { S } from "../../../gen/waypost/v1/tracking_pb.js";'),
      ...planted("delivery/kinds/amqp/proto.ts", 'import { S } from "../../../../gen/waypost/v1/destinations_pb.js";'),
    ];
    expect(genOutsideTheEdge(files)).toEqual(["ingest/from-proto.ts imports gen/"]);
  });

  test("a cycle inside the domain: plans importing ingest", () => {
    const files = planted("plans/check-call.ts", 'import type { Call } from "../ingest/call.js";');
    expect(domainOrderViolations(edgesOf(files))).toEqual([
      "plans/check-call.ts imports ingest/call.ts, which comes after it in the domain order",
    ]);
    expect(domainOrderViolations(edgesOf(planted("ingest/x.ts", 'import { c } from "../plans/check-call.js";')))).toEqual([]);
  });

  test("the API importing the compatible API, or the console either", () => {
    const files = [
      ...planted("api/routes.ts", 'import { parseRequest } from "../compat/parse-request.js";'),
      ...planted("console/server.ts", 'import type { Authenticator } from "../api/auth.js";'),
      ...planted("compat/http-api.ts", 'import { parseAuthorization } from "../api/auth.js";'),
    ];
    expect(edgeSiblingImports(edgesOf(files))).toEqual([
      "api/routes.ts imports compat/parse-request.ts, another module of the edge",
      "console/server.ts imports api/auth.ts, another module of the edge",
    ]);
  });

  test("the domain importing the edge", () => {
    const files = planted("delivery/loop.ts", 'import { e } from "../api/errors.js";');
    expect(upwardImports(edgesOf(files))).toEqual(["delivery/loop.ts (domain) imports api/errors.ts (edge)"]);
  });
});
