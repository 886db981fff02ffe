import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the proxy saw, and what it answered. */
export interface ProxiedExchange {
  method: string;
  path: string;
  /** The request's X-Retry-Count (what analytics SDKs add to a retry), if any. */
  retryCount: string | undefined;
  /** The preflight's Access-Control-Request-Headers, if any. */
  requestedHeaders: string | undefined;
  /** The messageIds in a POST body (one for a single call, each of a batch's). */
  messageIds: string[];
  /** 503 when the proxy failed the request itself; otherwise the upstream's status. */
  status: number;
}

export interface FlakyProxy {
  /** http://127.0.0.1:PORT */
  url: string;
  exchanges: ProxiedExchange[];
  /**
   * Resolves once `done` holds over the exchanges seen so far; re-checked as
   * each exchange completes. Rejects after `timeoutMs` naming what was seen,
   * so a call that never arrives fails the test with its evidence.
   */
  waitFor(done: (exchanges: ProxiedExchange[]) => boolean, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A reverse proxy on loopback standing in for a load balancer with a bad
 * moment: the first POST carrying a messageId it has not seen is answered
 * 503 (with the CORS header, so a page's script reads the status), and
 * everything else, preflights included, goes to `upstream` untouched. So
 * every call's first attempt fails and only a retry can deliver it.
 */
export async function startFlakyProxy(upstream: string): Promise<FlakyProxy> {
  const target = new URL(upstream);
  const seen = new Set<string>();
  const exchanges: ProxiedExchange[] = [];
  const waiters = new Set<() => void>();

  const record = (exchange: ProxiedExchange) => {
    exchanges.push(exchange);
    for (const check of [...waiters]) check();
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const base = {
        method: req.method ?? "",
        path: req.url ?? "",
        retryCount: single(req.headers["x-retry-count"]),
        requestedHeaders: single(req.headers["access-control-request-headers"]),
        messageIds: req.method === "POST" ? messageIdsOf(body) : [],
      };
      const fresh = base.messageIds.filter((id) => !seen.has(id));
      if (fresh.length > 0) {
        for (const id of fresh) seen.add(id);
        res.writeHead(503, { "content-type": "text/plain", "access-control-allow-origin": "*" });
        res.end("upstream briefly unavailable");
        record({ ...base, status: 503 });
        return;
      }
      const headers = { ...req.headers, host: target.host };
      const forward = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("end", () => record({ ...base, status: answer.statusCode ?? 502 }));
      });
      forward.on("error", (error) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(String(error));
        record({ ...base, status: 502 });
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    exchanges,
    waitFor(done, timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!done(exchanges)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          const seenSoFar = exchanges.map((e) =>
            e.method === "OPTIONS"
              ? `OPTIONS ${e.path} asking for ${e.requestedHeaders ?? "-"} → ${e.status}`
              : `${e.method} ${e.path} X-Retry-Count ${e.retryCount ?? "-"} → ${e.status}`,
          );
          reject(new Error(`not done after ${timeoutMs} ms; the proxy saw:\n${seenSoFar.join("\n")}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The messageIds of a single call's body or of each call in a batch; none for anything else. */
function messageIdsOf(body: Buffer): string[] {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { messageId?: unknown; batch?: Array<{ messageId?: unknown }> };
    const calls = Array.isArray(parsed.batch) ? parsed.batch : [parsed];
    return calls.map((c) => c.messageId).filter((id): id is string => typeof id === "string");
  } catch {
    return [];
  }
}
