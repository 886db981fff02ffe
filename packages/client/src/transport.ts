import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { DefaultTransportSettings, OwnedTransport } from "./auth-transport.js";

/**
 * Node's default transport: the Connect protocol with the JSON codec (the
 * batch splitter estimates sizes in JSON, so the estimate is the body), over
 * HTTP/1.1 with a keep-alive agent of our own, or HTTP/2 with a session
 * manager of our own. Owning them is what lets `close()` release sockets so
 * that the process can exit at once.
 */
export function createNodeTransport(settings: DefaultTransportSettings): OwnedTransport {
  if (settings.httpVersion === "2") {
    const sessionManager = new Http2SessionManager(settings.endpoint);
    const transport = createConnectTransport({
      baseUrl: settings.endpoint,
      httpVersion: "2",
      sessionManager,
      useBinaryFormat: false,
      interceptors: settings.interceptors,
    });
    return { transport, release: () => sessionManager.abort() };
  }
  const agent = settings.endpoint.startsWith("https:") ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const transport = createConnectTransport({
    baseUrl: settings.endpoint,
    httpVersion: "1.1",
    nodeOptions: { agent },
    useBinaryFormat: false,
    interceptors: settings.interceptors,
  });
  return { transport, release: () => agent.destroy() };
}
