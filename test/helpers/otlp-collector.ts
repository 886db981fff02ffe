import http from "node:http";
import type { AddressInfo } from "node:net";
import { decodeProtobufExport } from "./otlp-protobuf.js";

/** A span as an OTLP/HTTP JSON export carries it, with its attributes as plain values. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The resource's service.name. */
  serviceName: string;
}

export type CollectorMode = "accept" | "refuse" | "hang";

export interface OtlpCollector {
  /** The traces URL: http://127.0.0.1:PORT/v1/traces */
  tracesUrl: string;
  spans: CollectedSpan[];
  /** Export requests received, answered or not. */
  requests: number;
  /** Content types of the requests received. */
  contentTypes: Set<string>;
  /** Export requests answered. */
  answered: number;
  mode: CollectorMode;
  /** Resolves once spans matching `filter` number at least `count`. */
  waitForSpans(count: number, filter?: (span: CollectedSpan) => boolean): Promise<CollectedSpan[]>;
  /** Resolves once `count` export requests have arrived. */
  waitForRequests(count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real OTLP/HTTP endpoint on loopback that decodes what it receives, JSON
 * or protobuf, into spans. "refuse" answers 400 (the exporter gives the batch
 * up), "hang" never answers.
 */
export async function startOtlpCollector(mode: CollectorMode = "accept"): Promise<OtlpCollector> {
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      collector.requests++;
      if (collector.mode === "hang") {
        hanging.add(res);
      } else if (collector.mode === "refuse") {
        answer(res, 400, "{}");
      } else {
        const body = Buffer.concat(chunks);
        const type = req.headers["content-type"] ?? "";
        collector.contentTypes.add(type);
        collector.spans.push(...(type.startsWith("application/json") ? decode(body.toString("utf8")) : decodeProtobufExport(body)));
        answer(res, 200, "{}");
      }
      for (const wake of [...waiters]) wake();
    });
  });
  const answer = (res: http.ServerResponse, status: number, body: string) => {
    collector.answered++;
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!done()) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  const collector: OtlpCollector = {
    tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
    spans: [],
    requests: 0,
    contentTypes: new Set(),
    answered: 0,
    mode,
    async waitForSpans(count, filter = () => true) {
      await until(() => collector.spans.filter(filter).length >= count);
      return collector.spans.filter(filter);
    },
    waitForRequests: (count) => until(() => collector.requests >= count),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return collector;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans: Array<{
      spans: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }>;
    }>;
  }>;
}

function decode(body: string): CollectedSpan[] {
  const data = JSON.parse(body) as OtlpExport;
  return data.resourceSpans.flatMap((resourceSpans) => {
    const serviceName = String(plain(resourceSpans.resource?.attributes ?? [])["service.name"] ?? "");
    return resourceSpans.scopeSpans.flatMap((scope) =>
      scope.spans.map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? "",
        name: span.name,
        kind: span.kind,
        attributes: plain(span.attributes ?? []),
        statusCode: span.status?.code ?? 0,
        serviceName,
      })),
    );
  });
}

function plain(attributes: OtlpAttribute[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}
