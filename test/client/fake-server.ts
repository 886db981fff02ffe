import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";

export interface FakeServer {
  url: string;
  close(): Promise<void>;
}

type BatchHandler = ServiceImpl<typeof TrackingService>["batch"];

/**
 * A TrackingService of the test's own on a real loopback socket, for server
 * behaviour the real Waypost does not produce on demand (Retry-After hints,
 * scripted failures). HTTP/1.1 or HTTP/2 cleartext.
 */
export async function startFakeTrackingServer(batch: BatchHandler, options: { http2?: boolean } = {}): Promise<FakeServer> {
  const notUsed = () => {
    throw new Error("the batching client only calls Batch");
  };
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(TrackingService, {
        batch,
        identify: notUsed,
        track: notUsed,
        page: notUsed,
        screen: notUsed,
        group: notUsed,
        alias: notUsed,
      }),
  });
  if (options.http2) {
    const server = http2.createServer(handler);
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on("session", (s) => {
      sessions.add(s);
      s.on("close", () => sessions.delete(s));
    });
    return listen(server, () => {
      for (const s of sessions) s.destroy();
    });
  }
  return listen(http.createServer(handler), () => {});
}

/** A plain HTTP server, for answers a proxy in front of Waypost would give. */
export async function startRawServer(handler: http.RequestListener): Promise<FakeServer> {
  return listen(http.createServer(handler), () => {});
}

async function listen(server: http.Server | http2.Http2Server, dropConnections: () => void): Promise<FakeServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
        dropConnections();
      }),
  };
}
