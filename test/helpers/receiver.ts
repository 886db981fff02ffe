import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as sent. */
  body: string;
  /** The client's port: which process sent it, when several share the loopback. */
  remotePort?: number | undefined;
}

export interface ResponsePlan {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the connection stays open until the receiver closes). */
  hang?: boolean;
  /** Send the status, headers and `body`, then never end the body (the connection stays open until the receiver closes). */
  stall?: boolean;
  /** Answer only once this resolves. */
  after?: Promise<unknown>;
}

export type Responder = (request: ReceivedRequest, index: number) => ResponsePlan;

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Requests arrived and not yet answered or closed; and the most there ever were at once. */
  open: number;
  maxOpen: number;
  /** TLS handshakes the receiver saw fail (a client refusing its certificate). */
  tlsErrors: number;
  respond: Responder;
  /** Resolves once `count` requests have arrived in total. */
  waitForRequests(count: number): Promise<ReceivedRequest[]>;
  /** Resolves once `count` TLS handshakes have failed. */
  waitForTlsErrors(count: number): Promise<void>;
  close(): Promise<void>;
}

export type ReceiverTls = "none" | "self-signed" | "trusted";

export interface ReceiverOptions {
  /** Plain HTTP (default), or HTTPS with a self-signed or test-CA certificate. */
  tls?: ReceiverTls;
  /** How it answers (default 200 "ok"); `receiver.respond` can be swapped later. */
  respond?: Responder;
}

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));

/** A real webhook endpoint on loopback: plain HTTP, or HTTPS with a self-signed or test-CA certificate. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const tls = options.tls ?? "none";
  const waiters: Array<{ count: number; resolve: () => void; kind: "requests" | "tls" }> = [];
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: "",
    requests: [],
    open: 0,
    maxOpen: 0,
    tlsErrors: 0,
    respond: options.respond ?? (() => ({ status: 200, body: "ok" })),
    waitForRequests(count) {
      return new Promise((resolve) => {
        waiters.push({ count, kind: "requests", resolve: () => resolve(receiver.requests.slice(0, count)) });
        settle();
      });
    },
    waitForTlsErrors(count) {
      return new Promise((resolve) => {
        waiters.push({ count, kind: "tls", resolve });
        settle();
      });
    },
    close: async () => {},
  };
  function settle() {
    for (const waiter of [...waiters]) {
      const have = waiter.kind === "requests" ? receiver.requests.length : receiver.tlsErrors;
      if (have >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }
  const handler: http.RequestListener = (req, res) => {
    receiver.open++;
    receiver.maxOpen = Math.max(receiver.maxOpen, receiver.open);
    res.on("close", () => receiver.open--);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        remotePort: req.socket.remotePort,
      };
      const index = receiver.requests.push(request) - 1;
      const plan = receiver.respond(request, index);
      settle();
      if (plan.hang || plan.stall) {
        hanging.add(res);
        if (plan.stall) {
          res.writeHead(plan.status ?? 200, plan.headers ?? {});
          res.write(plan.body ?? "…");
        }
        return;
      }
      const answer = () => {
        res.writeHead(plan.status ?? 200, plan.headers ?? {});
        res.end(plan.body ?? "");
      };
      if (plan.after) void plan.after.then(answer);
      else answer();
    });
  };
  const server =
    tls === "none"
      ? http.createServer(handler)
      : https.createServer(
          tls === "self-signed"
            ? { key: fixture("self-signed-key.pem"), cert: fixture("self-signed-cert.pem") }
            : { key: fixture("trusted-key.pem"), cert: fixture("trusted-cert.pem") },
          handler,
        );
  server.on("tlsClientError", () => {
    receiver.tlsErrors++;
    settle();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  receiver.url = `${tls === "none" ? "http" : "https"}://127.0.0.1:${port}/hook`;
  receiver.close = () =>
    new Promise((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
