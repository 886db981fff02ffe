import { createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { expect, test } from "vitest";
import { SourceService } from "../../../gen/waypost/v1/source_pb.js";
import { isClientFaultMessage } from "../../../src/api/transport/rpc-client-faults.js";

// src/api/transport/rpc-client-faults.ts recognises Connect's "cannot decode
// the request" errors by their wording, since Connect labels them internal.
// This runs Connect's own router, without any of Waypost's transport, so an
// upgrade that rewords those messages fails here, loudly, instead of
// quietly turning client faults back into internal errors.

const upgradeHint =
  "Connect's wording for an undecodable request changed: update clientFaultPattern in src/api/transport/rpc-client-faults.ts";

function sourceHandler(): UniversalHandler {
  const router = createConnectRouter();
  router.service(SourceService, {});
  const handler = router.handlers.find((h) => h.requestPath.endsWith("/GetSource"));
  if (!handler) throw new Error("no GetSource handler");
  return handler;
}

function request(contentType: string, bytes: Uint8Array): UniversalServerRequest {
  return {
    httpVersion: "1.1",
    method: "POST",
    url: "http://127.0.0.1/waypost.v1.SourceService/GetSource",
    header: new Headers({ "content-type": contentType }),
    body: (async function* () {
      yield bytes;
    })(),
    signal: new AbortController().signal,
  };
}

async function readAll(body: AsyncIterable<Uint8Array> | undefined): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  if (body) for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

test("an undecodable binary message: Connect says `parse binary: ...`, as internal", async () => {
  const response = await sourceHandler()(request("application/proto", new Uint8Array([0x0a, 0x64, 0x0a, 0x01])));
  const error = JSON.parse((await readAll(response.body as AsyncIterable<Uint8Array>)).toString("utf8")) as {
    code: string;
    message: string;
  };
  expect(error.code, upgradeHint).toBe("internal");
  expect(isClientFaultMessage(error.message), `${upgradeHint} (message: ${error.message})`).toBe(true);
});

test("a compressed envelope without an encoding: Connect says `received compressed envelope ...`, as internal", async () => {
  const framed = new Uint8Array([1, 0, 0, 0, 2, 0x0a, 0x00]);
  const response = await sourceHandler()(request("application/grpc", framed));
  await readAll(response.body as AsyncIterable<Uint8Array>);
  const trailer = response.trailer ?? new Headers();
  expect(trailer.get("grpc-status"), upgradeHint).toBe("13");
  const message = decodeURIComponent(trailer.get("grpc-message") ?? "");
  expect(isClientFaultMessage(message), `${upgradeHint} (message: ${message})`).toBe(true);
});
