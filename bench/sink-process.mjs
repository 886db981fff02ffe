// @ts-check
// A webhook sink in its own process: answers 200 at once on keep-alive
// connections (any path but /dead, which never answers). With latency
// tracking on, it records when each messageId arrived. It is also the OTLP
// endpoint of the tracing runs: POST /v1/traces is answered 200 and its
// requests and bytes counted (not as webhooks). On /batch, a batched
// webhook's POST, it also counts the calls in the body ({"batch":[...]}, one
// messageId each); every other request counts as one call.
import http from "node:http";

let count = 0;
let calls = 0;
let otlpRequests = 0;
let otlpBytes = 0;
/** TCP connections accepted since the last reset (a client reusing connections opens few). */
let connections = 0;
let track = false;
/** @type {Array<[string, number]>} */
let arrivals = [];
/** @type {Set<http.ServerResponse>} */
const hanging = new Set();
/**
 * The parent's requests (bench/lib/sink.mjs), each answered with its id.
 * @typedef {{ id: number, type: "count" | "calls" | "otlp" | "connections" | "reset" | "arrivals" | "close", track?: boolean }} SinkRequest
 */

/** @param {object} message */
function send(message) {
  if (!process.send) throw new Error("the sink runs as a child process (bench/lib/sink.mjs forks it)");
  process.send(message);
}
const wallNow = () => performance.timeOrigin + performance.now();

/**
 * An OTLP/HTTP export (protobuf or JSON): counted, not decoded, and
 * answered with an empty ExportTraceServiceResponse in its encoding.
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 */
function receiveSpans(req, res) {
  req.on("data", (/** @type {Buffer} */ c) => (otlpBytes += c.length));
  req.on("end", () => {
    otlpRequests++;
    const json = String(req.headers["content-type"]).startsWith("application/json");
    res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" }).end(json ? "{}" : "");
  });
}

/**
 * A batch POST: its calls counted by their messageId keys (a call body has one, as its last keys).
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 */
function receiveBatch(req, res) {
  /** @type {Buffer[]} */
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString();
    for (let at = body.indexOf('"messageId":'); at !== -1; at = body.indexOf('"messageId":', at + 12)) calls++;
    count++;
    res.end("ok");
  });
}

const server = http.createServer((req, res) => {
  if (req.url === "/v1/traces") return receiveSpans(req, res);
  if (req.url === "/batch") return receiveBatch(req, res);
  if (req.url === "/dead") {
    hanging.add(res);
    res.on("close", () => hanging.delete(res));
    req.resume();
    return;
  }
  if (track) {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      const match = /"messageId":"([^"]+)"/.exec(body);
      if (match?.[1]) arrivals.push([match[1], wallNow()]);
      count++;
      calls++;
      res.end("ok");
    });
  } else {
    req.resume();
    req.on("end", () => {
      count++;
      calls++;
      res.end("ok");
    });
  }
});
server.on("connection", () => connections++);
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => send({ port: /** @type {import("node:net").AddressInfo} */ (server.address()).port }));

process.on("message", (/** @type {SinkRequest} */ message) => {
  if (message.type === "count") send({ id: message.id, count });
  else if (message.type === "calls") send({ id: message.id, count: calls });
  else if (message.type === "otlp") send({ id: message.id, requests: otlpRequests, bytes: otlpBytes });
  else if (message.type === "connections") send({ id: message.id, count: connections });
  else if (message.type === "reset") {
    count = 0;
    calls = 0;
    otlpRequests = 0;
    otlpBytes = 0;
    connections = 0;
    arrivals = [];
    track = Boolean(message.track);
    send({ id: message.id, ok: true });
  } else if (message.type === "arrivals") {
    send({ id: message.id, arrivals });
    arrivals = [];
  } else if (message.type === "close") {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
