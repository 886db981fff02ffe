import net from "node:net";
import { expect, test } from "vitest";
import { checkListenAddress } from "../../src/http/port-check.js";
import { StartupError } from "../../src/startup-error.js";

async function listening(port = 0): Promise<net.Server> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return server;
}
const portOf = (server: net.Server) => (server.address() as net.AddressInfo).port;
const close = (server: net.Server) => new Promise((resolve) => server.close(resolve));

test("a port in use is a StartupError naming the port and PORT", async () => {
  const taken = await listening();
  try {
    const error = await checkListenAddress(portOf(taken), "127.0.0.1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toBe(
      `port ${portOf(taken)} on 127.0.0.1 is in use (EADDRINUSE; another Waypost?): stop that process or set PORT`,
    );
  } finally {
    await close(taken);
  }
});

test("a free port is let go again, so the service can listen on it next", async () => {
  const free = await listening();
  const port = portOf(free);
  await close(free);
  await checkListenAddress(port, "127.0.0.1");
  const server = await listening(port);
  expect(portOf(server)).toBe(port);
  await close(server);
});

test("a HOST that is not this machine's is named", async () => {
  // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
  const error = await checkListenAddress(8080, "192.0.2.1").catch((e: unknown) => e);
  expect((error as Error).message).toMatch(/^HOST 192\.0\.2\.1 is not an address of this machine \(EADDRNOTAVAIL\): set HOST/);
});
