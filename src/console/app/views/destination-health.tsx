import type { ComponentChild } from "preact";
import { DestinationHealth, type Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { formatTime } from "../format.js";
import { healthLabel } from "../health.js";

/**
 * A destination's health on its own page: how its endpoint has been
 * answering, its last error and when, the failures in a row, and what holds
 * its deliveries (the circuit's next probe, a backoff the endpoint asked
 * for). Marked for attention unless healthy.
 */
export function DestinationHealthPanel(props: { destination: Destination }) {
  const d = props.destination;
  const unwell = d.health === DestinationHealth.FAILING || d.health === DestinationHealth.CIRCUIT_OPEN;
  const rows: Array<[string, ComponentChild]> = [
    ["Health", healthLabel(d)],
    ["Last error", d.lastError || "–"],
    ["Last failure", formatTime(d.lastFailureTime) || "–"],
    ["Last success", formatTime(d.lastSuccessTime) || "–"],
    ["Failures in a row", String(d.consecutiveFailures)],
  ];
  if (d.nextProbeTime) rows.push(["Next probe", formatTime(d.nextProbeTime)]);
  if (d.backoffUntilTime) rows.push(["Backing off until", formatTime(d.backoffUntilTime)]);
  return (
    <section aria-label="Health" class={unwell ? "attention" : undefined}>
      <h2>Health</h2>
      <dl class="props">{rows.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v}</dd>])}</dl>
      {d.lastError && (
        <p class="hint">
          <a href={`/console/deliveries?destination=${d.id}&status=retrying`}>Its retrying deliveries</a> show each attempt's error.
        </p>
      )}
    </section>
  );
}
