import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DestinationHealth, type DestinationSchema } from "../../gen/waypost/v1/destination_pb.js";
import type { DestinationRow } from "../db/queries/destinations.js";

type HealthFields = Pick<
  MessageInitShape<typeof DestinationSchema>,
  "health" | "lastSuccessTime" | "lastFailureTime" | "lastError" | "consecutiveFailures" | "nextProbeTime" | "backoffUntilTime"
>;

/**
 * The destination's health as the API shows it: circuit open while the
 * breaker holds its deliveries back (a probe in flight included); failing
 * when the last attempt failed or the endpoint asked to slow down; healthy
 * otherwise, also before the first attempt.
 */
export function healthFields(row: DestinationRow, now: Date): HealthFields {
  const backingOff = row.backoff_until !== null && row.backoff_until > now;
  const lastFailed = row.last_failure_at !== null && (row.last_success_at === null || row.last_failure_at > row.last_success_at);
  const open = row.circuit_state === "open" || row.circuit_state === "half_open";
  const health = open ? DestinationHealth.CIRCUIT_OPEN : lastFailed || backingOff ? DestinationHealth.FAILING : DestinationHealth.HEALTHY;
  return {
    health,
    lastSuccessTime: row.last_success_at ? timestampFromDate(row.last_success_at) : undefined,
    lastFailureTime: row.last_failure_at ? timestampFromDate(row.last_failure_at) : undefined,
    lastError: row.last_error ?? "",
    consecutiveFailures: row.consecutive_failures ?? 0,
    nextProbeTime: open && row.probe_at ? timestampFromDate(row.probe_at) : undefined,
    backoffUntilTime: backingOff ? timestampFromDate(row.backoff_until!) : undefined,
  };
}
