import { createConnectTransport } from "@connectrpc/connect-node";
import type { TestServer } from "../helpers/server.js";

/** A transport that sends the admin token, for TrackingPlanService clients. */
export function adminTransport(server: TestServer) {
  return createConnectTransport({
    baseUrl: server.url,
    httpVersion: "1.1",
    interceptors: [
      (next) => (req) => {
        req.header.set("authorization", `Bearer ${server.adminToken}`);
        return next(req);
      },
    ],
  });
}
