// A webhook sink in its own process: answers 200 at once on keep-alive
// connections (any path but /dead, which never answers). With latency
// tracking on, it records when each messageId arrived.
import http from "node:http";

let count = 0;
let track = false;
let arrivals = [];
const hanging = new Set();
const wallNow = () => performance.timeOrigin + performance.now();

const server = http.createServer((req, res) => {
  if (req.url === "/dead") {
    hanging.add(res);
    res.on("close", () => hanging.delete(res));
    req.resume();
    return;
  }
  if (track) {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      const match = /"messageId":"([^"]+)"/.exec(body);
      if (match) arrivals.push([match[1], wallNow()]);
      count++;
      res.end("ok");
    });
  } else {
    req.resume();
    req.on("end", () => {
      count++;
      res.end("ok");
    });
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));

process.on("message", (message) => {
  if (message.type === "count") process.send({ id: message.id, count });
  else if (message.type === "reset") {
    count = 0;
    arrivals = [];
    track = Boolean(message.track);
    process.send({ id: message.id, ok: true });
  } else if (message.type === "arrivals") {
    process.send({ id: message.id, arrivals });
    arrivals = [];
  } else if (message.type === "close") {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
