import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";
import type { TestServer } from "../helpers/server.js";

/** The ways a call reaches Waypost: the RPC protocols and the compatible HTTP API. */
export const protocols = ["connect", "grpc", "grpc-web", "v1"] as const;
export type Protocol = (typeof protocols)[number];

/** A fresh sampled traceparent, and its parts. */
export function newTraceparent(flags = "01"): { traceparent: string; traceId: string; parentId: string } {
  const traceId = randomBytes(16).toString("hex");
  const parentId = randomBytes(8).toString("hex");
  return { traceparent: `00-${traceId}-${parentId}-${flags}`, traceId, parentId };
}

/** A source routed to one destination whose webhook is a new receiver. */
export async function setupRoute(server: TestServer, respond?: Responder) {
  const receiver: Receiver = await startReceiver(respond ? { respond } : {});
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "traced hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  return { receiver, source, destination };
}

/** Sends one track call over `protocol` with these extra headers; resolves with its messageId. */
export async function trackWith(
  server: TestServer,
  protocol: Protocol,
  writeKey: string,
  headers: Record<string, string>,
  event = "Traced",
): Promise<string> {
  const messageId = `m-${randomBytes(6).toString("hex")}`;
  if (protocol === "v1") {
    const response = await fetch(`${server.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, ...headers },
      body: JSON.stringify({ userId: "u1", event, messageId }),
    });
    if (response.status !== 200) throw new Error(`/v1/track answered ${response.status}: ${await response.text()}`);
    return messageId;
  }
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })
      : protocol === "grpc"
        ? createGrpcTransport({ baseUrl: server.url })
        : createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" });
  const client = createClient(TrackingService, transport);
  await client.track({ track: { userId: "u1", event, messageId } }, { headers: { authorization: `Bearer ${writeKey}`, ...headers } });
  return messageId;
}
