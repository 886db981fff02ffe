import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight requests finish, then closes idle connections. */
  close(graceMs?: number): Promise<void>;
}

const http2Preface = Buffer.from("PRI * HTTP/2.0");

/**
 * HTTP/1.1 and HTTP/2 cleartext (h2c with prior knowledge, as gRPC uses) on
 * one port. Node's cleartext http2 server does not fall back to HTTP/1.1, so
 * each connection's first bytes decide which server gets the socket.
 */
export async function listen(handler: RequestHandler, port: number, host: string): Promise<Listener> {
  const h1 = http.createServer(handler as http.RequestListener);
  h1.keepAliveTimeout = 65_000;
  const h2 = http2.createServer({}, handler as never);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.once("data", (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      const isHttp2 = first.subarray(0, 3).equals(http2Preface.subarray(0, 3));
      (isHttp2 ? h2 : h1).emit("connection", socket);
      socket.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : port,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      h1.closeIdleConnections();
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      // Connections that become idle after their last response close too.
      const idle = setInterval(() => h1.closeIdleConnections(), 100);
      await closed;
      clearTimeout(timer);
      clearInterval(idle);
    },
  };
}
