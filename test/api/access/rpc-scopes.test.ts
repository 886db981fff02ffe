import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { allScopes, isScope } from "../../../src/access/roles.js";
import { rpcRules } from "../../../src/api/access/rpc-scopes.js";
import { adminRpcs } from "./admin-services.js";

describe("the RPC scope table", () => {
  it("names a scope for every admin RPC of the generated services", () => {
    const missing = adminRpcs.filter((rpc) => !rpcRules[rpc.key]).map((rpc) => rpc.key);
    expect(missing).toEqual([]);
  });

  it("has no row for an RPC that does not exist", () => {
    const known = new Set(adminRpcs.map((rpc) => rpc.key));
    expect(Object.keys(rpcRules).filter((key) => !known.has(key))).toEqual([]);
  });

  it("names only known scopes", () => {
    const unknown = Object.entries(rpcRules).filter(([, rule]) => rule.scope !== "authenticated" && !isScope(rule.scope));
    expect(unknown).toEqual([]);
  });

  it("uses every scope a role can hold", () => {
    const used = new Set(Object.values(rpcRules).map((rule) => rule.scope));
    // tokens:read and tokens:write are checked inside TokenService (own tokens need neither).
    expect(allScopes.filter((scope) => !used.has(scope) && !scope.startsWith("tokens:"))).toEqual([]);
  });

  it("covers every service the proto files declare", () => {
    const protoDir = new URL("../../../proto/waypost/v1/", import.meta.url);
    const declared = readdirSync(protoDir)
      .flatMap((file) => [...readFileSync(new URL(file, protoDir), "utf8").matchAll(/^service (\w+) \{/gm)].map((m) => m[1]))
      .filter((name) => name !== "TrackingService");
    const listed = new Set(adminRpcs.map((rpc) => rpc.key.split("/")[0]));
    expect(declared.filter((name) => !listed.has(name))).toEqual([]);
  });
});
