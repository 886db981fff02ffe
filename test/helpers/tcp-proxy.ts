import net from "node:net";

/** A TCP proxy that can be taken down (connections refused and cut) and brought back: a warehouse going away. */
export interface TcpProxy {
  port: number;
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let isUp = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!isUp) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    down() {
      isUp = false;
      for (const s of sockets) s.destroy();
    },
    up() {
      isUp = true;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
