import { useState } from "preact/hooks";
import { DeliveryStatus } from "../../../../gen/waypost/v1/delivery_pb.js";
import { ErrorMessage } from "../components.js";
import { useAction } from "../context.js";
import { filterToRequest, statusOf, type DeliveryFilter } from "../delivery-filter.js";

const replayable = new Set([DeliveryStatus.FAILED, DeliveryStatus.EXPIRED, DeliveryStatus.RETRYING]);

/**
 * Replays every delivery the filter matches (failed and expired ones, or
 * the filtered status), in the background on the server. It needs one
 * destination: a bulk replay never spans destinations by accident.
 */
export function RetryAllMatching(props: { filter: DeliveryFilter; onQueued(): void }) {
  const action = useAction();
  const [result, setResult] = useState<string | undefined>();
  const status = statusOf(props.filter.status);
  const reason = !props.filter.destination
    ? "Choose a destination to retry its matching deliveries."
    : status !== undefined && !replayable.has(status)
      ? "Only failed, expired or retrying deliveries can be retried."
      : undefined;

  async function retryAll() {
    setResult(undefined);
    const { destinationId, messageId, userId, since, until } = filterToRequest(props.filter);
    const statuses = status !== undefined ? [status] : [];
    const what = status !== undefined ? props.filter.status : "failed and expired";
    if (!confirm(`Retry every ${what} delivery matching this filter?`)) return;
    const response = await action.run((api) =>
      api.deliveries.retryDeliveries({ destinationId, statuses, messageId, userId, since, until }),
    );
    if (!response) return;
    const skipped =
      response.notReplayableCount > 0n
        ? ` ${response.notReplayableCount} could not be replayed: their messages are past the retention period.`
        : "";
    setResult(`Replaying ${response.replayCount} deliveries in the background.${skipped}`);
    props.onQueued();
  }

  return (
    <div class="retry-all">
      <button type="button" disabled={reason !== undefined || action.busy} aria-describedby="retry-all-hint" onClick={retryAll}>
        Retry all matching
      </button>
      <span id="retry-all-hint" class="hint">
        {reason ?? "Replays the failed and expired deliveries this filter matches (or those of the chosen status)."}
      </span>
      {result && (
        <p role="status" class="ok">
          {result}
        </p>
      )}
      <ErrorMessage error={action.error} />
    </div>
  );
}
