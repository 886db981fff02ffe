import { AttemptOutcome, type Delivery, type DeliveryAttempt } from "../../../gen/waypost/v1/delivery_pb.js";
import { fields, statusText, table, time } from "../format.js";

/** The columns of `deliveries list`; with `destinationNames` (every destination's), a DESTINATION column of names. */
export function deliveryRows(deliveries: readonly Delivery[], destinationNames?: ReadonlyMap<string, string>): string {
  const headers = ["ID", "CREATED", "STATUS", "TYPE", "MESSAGE ID", "USER", "ATTEMPTS", ...(destinationNames ? ["DESTINATION"] : [])];
  return table(
    headers,
    deliveries.map((d) => [
      d.id,
      time(d.createTime),
      statusText(d.status),
      d.type,
      d.messageId,
      d.userId || "-",
      String(d.attemptCount),
      ...(destinationNames ? [destinationNames.get(d.destinationId) ?? d.destinationId] : []),
    ]),
  );
}

function outcomeText(outcome: AttemptOutcome): string {
  return (AttemptOutcome[outcome] ?? String(outcome)).toLowerCase();
}

/** The last attempt's result, in a few words: "200", "503", "error: ECONNREFUSED ...". */
export function lastResult(d: Delivery): string {
  const last = d.attempts[d.attempts.length - 1];
  if (!last) return "-";
  return last.statusCode ? String(last.statusCode) : `error: ${last.error}`;
}

/** One finished delivery on one line (deliveries tail), with its destination's name. */
export function tailLine(d: Delivery, destinationName: string): string {
  return [
    time(d.finalizeTime),
    statusText(d.status).padEnd(9),
    d.id,
    destinationName,
    d.type,
    d.messageId,
    d.userId || "-",
    lastResult(d),
  ].join("  ");
}

/** `deliveries get`: fields, the headers sent, the body and every attempt (with the requests it kept). */
export function describeDelivery(d: Delivery): string {
  const head = fields([
    ["id", d.id],
    ["destination", d.destinationId],
    ["source", d.sourceId],
    ["message id", d.messageId],
    ["type", d.type],
    ["user", d.userId || "-"],
    ["anonymous id", d.anonymousId || "-"],
    ["status", statusText(d.status)],
    ["attempts", String(d.attemptCount)],
    ["created", time(d.createTime)],
    ["first attempt", time(d.firstAttemptTime)],
    ["next attempt", time(d.nextAttemptTime)],
    ["finished", time(d.finalizeTime)],
  ]);
  // An integration's attempts name their subscription and method: shown only when some attempt has them.
  const named = d.attempts.some((a) => a.subscription !== "");
  // Attempts made as part of a batch operation (one POST for many calls) name it.
  const batched = d.attempts.some((a) => a.batchId !== "");
  const attempts = table(
    [
      "#",
      "TIME",
      ...(named ? ["SUBSCRIPTION"] : []),
      "URL",
      "OUTCOME",
      "STATUS",
      "LATENCY",
      "ERROR / RESPONSE",
      ...(batched ? ["BATCH"] : []),
    ],
    d.attempts.map((a) => [
      String(a.attempt),
      time(a.attemptTime),
      ...(named ? [a.subscription || "-"] : []),
      named && a.method ? `${a.method} ${a.url}` : a.url,
      outcomeText(a.outcome),
      a.statusCode ? String(a.statusCode) : "-",
      `${a.latencyMs} ms`,
      (a.error || a.responseBody).replace(/\s+/g, " ").slice(0, 120),
      ...(batched ? [a.batchId ? `${a.batchId} (${a.batchCalls} calls)` : "-"] : []),
    ]),
  );
  // The destination builds its own requests (an integration): the body is the call, and what was sent is each attempt's.
  if (d.requestsInAttempts) {
    const sent = d.attempts.filter((a) => a.method !== "").map(describeRequest);
    const requests = sent.length > 0 ? sent.join("\n\n") : "  none sent yet";
    return `${head}\ncall (as stored; the requests sent are below):\n${d.body}\n\n${attempts}\n\nrequests sent (secrets masked):\n${requests}`;
  }
  const headers = Object.entries(d.requestHeaders)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join("\n");
  const batches = [...new Map(d.attempts.filter((a) => a.batchId !== "").map((a) => [a.batchId, batchLine(a)])).values()];
  const together = batches.length > 0 ? `\n\nbatches:\n${batches.join("\n")}` : "";
  return `${head}\nheaders sent (secrets masked):\n${headers}\n\nbody:\n${d.body}\n\n${attempts}${together}`;
}

/** Which batch operation an attempt was part of, and the deliveries of the other calls it carried. */
function batchLine(a: DeliveryAttempt): string {
  const line = `  batch ${a.batchId} (${a.batchCalls} ${a.batchCalls === 1 ? "call" : "calls"})`;
  return a.batchDeliveryIds.length > 0 ? `${line}, with deliveries ${a.batchDeliveryIds.join(", ")}` : line;
}

/** One request an attempt kept: its attempt and subscription, method and URL, headers, batch and body as sent. */
function describeRequest(a: DeliveryAttempt): string {
  const lines = [`attempt ${a.attempt}${a.subscription ? `, subscription "${a.subscription}"` : ""}: ${a.method} ${a.url}`];
  if (a.batchId) lines.push(batchLine(a));
  for (const [k, v] of Object.entries(a.requestHeaders)) lines.push(`  ${k}: ${v}`);
  const cut =
    a.requestBodyBytes > Buffer.byteLength(a.requestBody)
      ? ` (the first ${Buffer.byteLength(a.requestBody)} of ${a.requestBodyBytes} bytes)`
      : "";
  lines.push(`  body${cut}:`, a.requestBody);
  return lines.join("\n");
}
