import type { Destination } from "../../../gen/waypost/v1/destination_pb.js";
import { DestinationHealth, DestinationSchema, Ordering } from "../../../gen/waypost/v1/destination_pb.js";
import { enumWords } from "../../enum-words.js";

/**
 * A destination's state for people: disabled, enabled, or the endpoint
 * health the server reports (circuit open, failing). The health field is
 * read through the message's schema, so the console shows it whenever the
 * server's API has it.
 */
export function destinationState(destination: Destination): string {
  if (destination.enabled === false) return "disabled";
  const field = DestinationSchema.fields.find((f) => f.localName === "health");
  if (field?.fieldKind === "enum") {
    const value = (destination as unknown as Record<string, number>)[field.localName];
    const name = field.enum.values.find((v) => v.number === value)?.name ?? "";
    if (/CIRCUIT_OPEN$/.test(name)) return "circuit open";
    if (/FAILING$/.test(name)) return "enabled, failing";
  }
  return "enabled";
}

const healthLabels = enumWords(DestinationHealth, { [DestinationHealth.UNSPECIFIED]: "—" }, true);

/** The endpoint's health for the Health column; "—" when the server reports none. */
export function healthLabel(destination: Destination): string {
  return healthLabels[destination.health] ?? "—";
}

/** The rate limit: "N/s", or "none" when absent or 0. */
export function rateLimitLabel(destination: Destination): string {
  return destination.maxRequestsPerSecond ? `${destination.maxRequestsPerSecond}/s` : "none";
}

/** The ordering; unspecified reads as none, as on the server. */
export function orderingLabel(destination: Destination): string {
  return destination.ordering === Ordering.PER_USER ? "Per user" : "None";
}
