import type { CallType } from "../calls/call.js";
import { callFromJson, type MessageDefaults, type ParsedMessage } from "../ingest/call-from-json.js";
import { FieldProblem, isPlainObject, readObject, readSentAt, type Fields } from "../ingest/json-fields.js";
import { limits } from "../ingest/limits.js";
import { CompatError } from "./errors.js";

/** What an endpoint takes: a batch envelope, or one flat message of a fixed type. */
export type Endpoint = { kind: "batch" } | { kind: "single"; type: CallType };

export interface ParsedRequest {
  /** The body's `writeKey`, used only when no Authorization header names one. */
  writeKey: string | undefined;
  /** One entry per message, in request order. */
  messages: ParsedMessage[];
}

/**
 * The body as JSON, whatever the Content-Type: rudder-sdk-node labels its
 * gzip JSON application/x-www-form-urlencoded and the browser library labels
 * its JSON text/plain. JSON.parse itself is iterative, so
 * deep nesting cannot overflow the stack here.
 */
export function parseJsonBody(body: Buffer): Fields {
  let text = body.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === "") throw new CompatError(400, "invalid_json", "request body is empty: send a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CompatError(400, "invalid_json", `request body is not valid JSON: ${(error as Error).message.slice(0, 200)}`);
  }
  if (!isPlainObject(value)) throw new CompatError(400, "invalid_json", "request body must be a JSON object");
  return value;
}

/**
 * Splits a parsed body into its messages, each read by callFromJson;
 * request-level problems throw a 400.
 */
export function parseRequest(endpoint: Endpoint, body: Fields): ParsedRequest {
  const writeKey = typeof body.writeKey === "string" && body.writeKey !== "" ? body.writeKey : undefined;
  if (endpoint.kind === "single") {
    return { writeKey, messages: [callFromJson(body, endpoint.type)] };
  }
  const batch = body.batch;
  if (batch === undefined || batch === null) {
    throw new CompatError(400, "invalid_request", 'batch is required: send {"batch":[{"type":"track",...}]}');
  }
  if (!Array.isArray(batch)) throw new CompatError(400, "invalid_request", "batch must be an array of messages");
  if (batch.length > limits.maxBatchMessages) throw tooManyMessages(batch.length);
  const defaults = readDefaults(body);
  return { writeKey, messages: batch.map((raw: unknown) => callFromJson(raw, undefined, defaults)) };
}

/** A batch's own context and integrations; a wrong type fails the whole request. */
function readDefaults(body: Fields): MessageDefaults {
  try {
    return { context: readObject(body, "context"), integrations: readObject(body, "integrations"), sentAt: readSentAt(body) };
  } catch (error) {
    if (error instanceof FieldProblem) throw new CompatError(400, "invalid_request", error.reason);
    throw error;
  }
}

function tooManyMessages(count: number): CompatError {
  return new CompatError(
    400,
    "invalid_request",
    `batch has ${count} messages, over the limit of ${limits.maxBatchMessages} per request: send them in several batches`,
  );
}
