// Before the tests: RabbitMQ and NATS JetStream must answer, since under
// CI=true the broker tests fail rather than skip. Says which one is missing.
import net from "node:net";

const brokers = [
  { name: "RabbitMQ", env: "WAYPOST_TEST_AMQP_URL", url: process.env.WAYPOST_TEST_AMQP_URL || "amqp://guest:guest@127.0.0.1:5672", port: 5672 },
  { name: "NATS JetStream", env: "WAYPOST_TEST_NATS_URL", url: process.env.WAYPOST_TEST_NATS_URL || "nats://127.0.0.1:4222", port: 4222 },
];

/** RabbitMQ answers the AMQP 0-9-1 header with connection.start (frame type 1); NATS greets with INFO. */
function answers({ name, url, port }) {
  const parsed = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(parsed.port || port), parsed.hostname.replace(/^\[(.*)\]$/, "$1"));
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(5_000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => {
      if (name === "RabbitMQ") socket.write(Buffer.from("AMQP\x00\x00\x09\x01", "latin1"));
    });
    socket.once("data", (data) => done(name === "RabbitMQ" ? data[0] === 1 : data.toString("latin1").startsWith("INFO")));
  });
}

let missing = 0;
for (const broker of brokers) {
  const where = broker.url.replace(/\/\/[^@/]*@/, "//");
  if (await answers(broker)) {
    console.log(`${broker.name} answers at ${where}`);
  } else {
    missing++;
    console.error(`${broker.name} does not answer at ${where} (set ${broker.env}, or start it): the broker tests need it`);
  }
}
process.exit(missing === 0 ? 0 : 1);
