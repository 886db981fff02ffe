import type { StatsWindow } from "../../../../gen/waypost/v1/delivery_pb.js";

/** The reasons a call is held back, as the filtered calls page names them (its ?reason=). */
const reasons = [
  { key: "filter", label: "filter", count: (w: StatsWindow) => w.heldBack?.filter ?? 0n },
  { key: "consent", label: "consent", count: (w: StatsWindow) => w.heldBack?.consent ?? 0n },
  { key: "subscriptions", label: "subscriptions", count: (w: StatsWindow) => w.heldBack?.subscriptions ?? 0n },
  { key: "transform", label: "transform", count: (w: StatsWindow) => w.heldBack?.transform ?? 0n },
  { key: "disabled", label: "disabled", count: (w: StatsWindow) => w.heldBack?.disabled ?? 0n },
  { key: "integrations-off", label: "integrations off", count: (w: StatsWindow) => w.heldBack?.integrationsOff ?? 0n },
] as const;

/**
 * The calls a destination got no delivery for in one period, by reason:
 * the Filtered figure split (filter, consent, subscriptions, transform) and
 * the calls it missed while disabled or turned off by their integrations.
 * Each count links to the list of those calls.
 */
export function HeldBack(props: { destinationId: string; window: StatsWindow; period: string }) {
  const held = reasons.map((r) => ({ ...r, calls: r.count(props.window) })).filter((r) => r.calls > 0n);
  const label = `Held back in the ${props.period}`;
  return (
    <p class="hint" role="note" aria-label={label}>
      {label}:{" "}
      {held.length === 0
        ? "none."
        : held.map((r, i) => (
            <span key={r.key}>
              {i > 0 && ", "}
              <a
                href={`/console/destinations/${props.destinationId}/filtered?minutes=${props.window.minutes}&reason=${r.key}`}
                aria-label={`${r.calls} held back by ${r.label} in the ${props.period}: list them`}
              >
                {r.calls.toString()}
              </a>{" "}
              {r.label}
            </span>
          ))}
    </p>
  );
}
