import net from "node:net";
import { afterEach, expect, test, vi } from "vitest";
import { brokerAnswers } from "../../helpers/brokers.js";

/** A port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const ci = process.env.CI;
afterEach(() => {
  if (ci === undefined) delete process.env.CI;
  else process.env.CI = ci;
  vi.restoreAllMocks();
});

test("a missing broker skips the broker tests with one line saying so, never naming the password", async () => {
  delete process.env.CI;
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  const url = `amqp://guest:pw-xyz@127.0.0.1:${await closedPort()}`;
  expect(await brokerAnswers("amqp", url)).toBe(false);
  expect(warn).toHaveBeenCalledTimes(1);
  expect(String(warn.mock.calls[0]![0])).toMatch(
    /^skipping the amqp broker tests: RabbitMQ \(WAYPOST_TEST_AMQP_URL\) does not answer at amqp:\/\/127\.0\.0\.1:\d+$/,
  );
});

test("under CI=true a missing broker fails instead", async () => {
  process.env.CI = "true";
  const url = `nats://127.0.0.1:${await closedPort()}`;
  await expect(brokerAnswers("nats", url)).rejects.toThrow(
    /NATS JetStream \(WAYPOST_TEST_NATS_URL\) does not answer .*under CI=true the broker tests never skip/,
  );
});

test("a server that accepts but speaks another protocol is not taken for the broker", async () => {
  delete process.env.CI;
  vi.spyOn(console, "warn").mockImplementation(() => {});
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as net.AddressInfo;
    expect(await brokerAnswers("nats", `nats://127.0.0.1:${port}`)).toBe(false);
    expect(await brokerAnswers("amqp", `amqp://127.0.0.1:${port}`)).toBe(false);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
