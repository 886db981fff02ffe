import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import { promisify } from "node:util";

/**
 * A loopback stand-in for every vendor's API, reached through a proxy.
 *
 * `proxyUrl` is an HTTP proxy on 127.0.0.1: a CONNECT to any host:port opens a
 * tunnel to one loopback HTTPS server whose certificate for the requested
 * name (SNI) is signed by a test CA (`caPem`, `caFile`), made on first use
 * with the openssl CLI and cached per host for the process. A plain-HTTP
 * request in absolute form (`GET http://host/path`, how a client sends
 * through HTTP_PROXY) is answered by the proxy itself. Host names need not
 * resolve (`hooks.vendor.test`): the client sends the name to the proxy,
 * never to DNS.
 *
 * Pointing a test server at it (in-process): the proxy goes in the outbound
 * config, and the CA is trusted in addition to the system roots through the
 * `ca` option (the same path as test/fixtures/tls's CA):
 *
 * ```ts
 * const vendor = await startVendorStandIn();
 * const server = await startTestServer({
 *   config: { outbound: { ...outboundDefaults, httpsProxy: vendor.proxyUrl } },
 *   ca: vendor.caPem,
 * });
 * ```
 *
 * where `outboundDefaults` is `loadConfig({...}).outbound` (or spread the base
 * config's `outbound`), `ca` is added to the roots (never instead of them),
 * and `trustTestCa` keeps test/fixtures/tls's CA trusted beside it. A spawned
 * server (test/helpers/process.ts) takes the environment instead:
 * `HTTPS_PROXY=<proxyUrl>` and `NODE_EXTRA_CA_CERTS=<caFile>`.
 */
export interface VendorRequest {
  /** The host name the client asked for (Host header, without a default port). */
  host: string;
  method: string;
  /** Path and query. */
  path: string;
  /** https://host/path?query (http:// for a plain request through the proxy). */
  url: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

export interface VendorReply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the connection stays open until close()): a vendor that hangs. */
  hang?: boolean;
}

export interface VendorStandIn {
  /** http://127.0.0.1:PORT: a CONNECT proxy that sends every host to the stand-in. */
  proxyUrl: string;
  /** The test CA that signs the stand-in's certificate for any host (SNI). */
  caPem: string;
  /** The same, as a file (NODE_EXTRA_CA_CERTS for a spawned server). */
  caFile: string;
  /** Every request received, in order. */
  requests: VendorRequest[];
  /** How to answer; `undefined` (or no function) answers 200 `{}`. */
  respond(reply: (request: VendorRequest) => VendorReply | undefined): void;
  /** Resolves once `count` requests have arrived in total (with the first `count`). */
  waitForRequests(count: number): Promise<VendorRequest[]>;
  /** CONNECT tunnels opened (connections to the "vendor"). */
  tunnels: number;
  /** The authority (host:port) of each CONNECT, in order. */
  connects: string[];
  /** The HTTPS server's own port on 127.0.0.1, for a client that goes direct (NO_PROXY) as https://localhost:PORT. */
  httpsPort: number;
  /** TLS connections the HTTPS server accepted (through tunnels or direct). */
  tlsConnections: number;
  close(): Promise<void>;
}

const run = promisify(execFile);
const openssl = "/usr/bin/openssl";

interface Authority {
  dir: string;
  keyFile: string;
  certFile: string;
  pem: string;
  hosts: Map<string, Promise<{ key: string; cert: string }>>;
}

let authority: Promise<Authority> | undefined;

/** The test CA, made once per process (an EC key: quick to make and to sign with). */
function testAuthority(): Promise<Authority> {
  authority ??= (async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "waypost-vendor-ca-"));
    const keyFile = path.join(dir, "ca-key.pem");
    const certFile = path.join(dir, "ca-cert.pem");
    await run(openssl, [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "3650",
      "-subj",
      "/CN=Waypost test vendor CA",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    return { dir, keyFile, certFile, pem: readFileSync(certFile, "utf8"), hosts: new Map() };
  })();
  return authority;
}

/** A certificate for `host` (a name or an IP) signed by the test CA, cached per host. */
async function certificateFor(host: string): Promise<{ key: string; cert: string }> {
  const ca = await testAuthority();
  let made = ca.hosts.get(host);
  if (!made) {
    made = (async () => {
      const base = path.join(ca.dir, host.replace(/[^a-zA-Z0-9.-]/g, "_"));
      const san = host === "localhost" ? "DNS:localhost,IP:127.0.0.1,IP:::1" : net.isIP(host) ? `IP:${host}` : `DNS:${host}`;
      writeFileSync(
        `${base}.ext`,
        `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`,
      );
      await run(openssl, [
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        `${base}-key.pem`,
        "-out",
        `${base}.csr`,
        "-subj",
        `/CN=${host.slice(0, 64)}`,
      ]);
      await run(openssl, [
        "x509",
        "-req",
        "-in",
        `${base}.csr`,
        "-CA",
        ca.certFile,
        "-CAkey",
        ca.keyFile,
        "-set_serial",
        `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex")}`,
        "-days",
        "825",
        "-extfile",
        `${base}.ext`,
        "-out",
        `${base}-cert.pem`,
      ]);
      return { key: readFileSync(`${base}-key.pem`, "utf8"), cert: readFileSync(`${base}-cert.pem`, "utf8") };
    })();
    ca.hosts.set(host, made);
    made.catch(() => ca.hosts.delete(host));
  }
  return made;
}

/** Starts the stand-in: the HTTPS server and the proxy in front of it, both on 127.0.0.1. */
export async function startVendorStandIn(): Promise<VendorStandIn> {
  const ca = await testAuthority();
  const fallback = await certificateFor("localhost");
  let reply: ((request: VendorRequest) => VendorReply | undefined) | undefined;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
  };

  const standIn: VendorStandIn = {
    proxyUrl: "",
    caPem: ca.pem,
    caFile: ca.certFile,
    requests: [],
    respond(next) {
      reply = next;
    },
    waitForRequests(count) {
      return new Promise((resolve) => {
        waiters.push({ count, resolve: () => resolve(standIn.requests.slice(0, count)) });
        settle();
      });
    },
    tunnels: 0,
    connects: [],
    httpsPort: 0,
    tlsConnections: 0,
    close: async () => {},
  };
  function settle() {
    for (const waiter of [...waiters]) {
      if (standIn.requests.length < waiter.count) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  /** Records a request once its body is in, and answers it. */
  function answer(req: http.IncomingMessage, res: http.ServerResponse, scheme: "https" | "http") {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const absolute = /^https?:\/\//i.test(req.url ?? "") ? new URL(req.url!) : undefined;
      const authority = absolute?.host ?? req.headers.host ?? "";
      const requestPath = absolute ? `${absolute.pathname}${absolute.search}` : (req.url ?? "/");
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      const request: VendorRequest = {
        host: new URL(`${scheme}://${authority}`).hostname.replace(/^\[(.*)\]$/, "$1"),
        method: req.method ?? "",
        path: requestPath,
        url: `${scheme}://${new URL(`${scheme}://${authority}`).host}${requestPath}`,
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      standIn.requests.push(request);
      const planned = reply?.(request) ?? { status: 200, headers: { "content-type": "application/json" }, body: "{}" };
      if (planned.hang) {
        settle();
        return;
      }
      res.writeHead(planned.status, planned.headers ?? {});
      res.end(planned.body ?? "");
      settle();
    });
  }

  const vendor = https.createServer(
    {
      key: fallback.key,
      cert: fallback.cert,
      SNICallback(servername, done) {
        certificateFor(servername).then(
          (made) => done(null, tls.createSecureContext(made)),
          (error: Error) => done(error),
        );
      },
    },
    (req, res) => answer(req, res, "https"),
  );
  vendor.on("secureConnection", (socket) => {
    standIn.tlsConnections++;
    track(socket);
  });
  vendor.on("tlsClientError", () => {});

  const proxy = http.createServer((req, res) => answer(req, res, "http"));
  proxy.on("connection", track);
  proxy.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    standIn.tunnels++;
    standIn.connects.push(req.url ?? "");
    track(client);
    const upstream = net.connect(standIn.httpsPort, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream).pipe(client);
    });
    track(upstream);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });

  await new Promise<void>((resolve) => vendor.listen(0, "127.0.0.1", resolve));
  standIn.httpsPort = (vendor.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  standIn.proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  standIn.close = async () => {
    for (const socket of sockets) socket.destroy();
    vendor.closeAllConnections();
    proxy.closeAllConnections();
    await Promise.all([
      new Promise<void>((resolve) => vendor.close(() => resolve())),
      new Promise<void>((resolve) => proxy.close(() => resolve())),
    ]);
  };
  return standIn;
}
